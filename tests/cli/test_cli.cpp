// The arfit command as a user meets it: --help everywhere, --version, and usage errors with exit code 2.
#include <gtest/gtest.h>

#include <regex>
#include <set>
#include <string>

#include "test_support.h"

using arfit::testing::arfit_bin;
using arfit::testing::run_command;

namespace {

// Subcommand names listed under "Subcommands:" in `arfit --help`.
std::set<std::string> listed_subcommands() {
  auto r = run_command(arfit_bin() + " --help");
  std::set<std::string> names;
  auto pos = r.output.find("Subcommands:");
  if (pos == std::string::npos) return names;
  std::regex line_re("\\n  ([a-z][a-z0-9-]*) ");
  std::string rest = r.output.substr(pos);
  for (std::sregex_iterator it(rest.begin(), rest.end(), line_re), end; it != end; ++it) names.insert((*it)[1]);
  return names;
}

}  // namespace

TEST(Cli, HelpListsSubcommandsAndExitsZero) {
  auto r = run_command(arfit_bin() + " --help");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Usage:"), std::string::npos) << r.output;
  EXPECT_TRUE(listed_subcommands().count("version")) << r.output;
}

TEST(Cli, EverySubcommandHasHelp) {
  auto names = listed_subcommands();
  ASSERT_FALSE(names.empty());
  for (const auto& n : names) {
    auto r = run_command(arfit_bin() + " " + n + " --help");
    EXPECT_EQ(r.exit_code, 0) << n << ": " << r.output;
    EXPECT_NE(r.output.find("Usage:"), std::string::npos) << n << ": " << r.output;
  }
}

TEST(Cli, VersionFlagAndCommandPrintTheVersion) {
  auto a = run_command(arfit_bin() + " --version");
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_NE(a.output.find(std::string("arfit ") + ARFIT_VERSION), std::string::npos) << a.output;
  auto b = run_command(arfit_bin() + " version");
  EXPECT_EQ(b.exit_code, 0);
  EXPECT_NE(b.output.find(ARFIT_VERSION), std::string::npos) << b.output;
}

TEST(Cli, UnknownOptionIsAUsageError) {
  auto r = run_command(arfit_bin() + " --no-such-option");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  auto s = run_command(arfit_bin() + " version --no-such-option");
  EXPECT_EQ(s.exit_code, 2) << s.output;
  EXPECT_NE(s.output.find("no-such-option"), std::string::npos) << s.output;
}

TEST(Cli, MissingSubcommandIsAUsageError) {
  auto r = run_command(arfit_bin());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("subcommand"), std::string::npos) << r.output;
}
