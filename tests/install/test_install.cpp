// The `install` label: arfit installed into a fresh prefix (the install_setup fixture, install_setup.cmake) is
// usable as a C++ library from another project, and `cpack -G DEB` packages it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.h"

namespace fs = std::filesystem;
using arfit::testing::run_command;
using arfit::testing::TempDir;

namespace {

const fs::path kWork = ARFIT_INSTALL_WORK_DIR;
const fs::path kPrefix = kWork / "prefix";
const std::string kModels = (kWork / "models.json").string();

std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

struct StrategyLine {
  double time_us = 0, lo_us = 0, hi_us = 0;
  std::string how;
};
struct CellAnswer {
  std::map<std::string, StrategyLine> strategies;
  std::string choice;
};

// Parses choose_allreduce's output ("STRATEGY time lo hi how" lines, then "choice S").
CellAnswer parse_answer(const std::string& text) {
  CellAnswer a;
  std::istringstream in(text);
  std::string word;
  while (in >> word) {
    if (word == "choice") {
      in >> a.choice;
      continue;
    }
    StrategyLine l;
    in >> l.time_us >> l.lo_us >> l.hi_us >> l.how;
    a.strategies[word] = l;
  }
  return a;
}

struct Cell {
  int tp;
  long tokens, hidden;
};
const std::vector<Cell> kCells = {{2, 1, 4096}, {2, 64, 4096}, {4, 1024, 4096}, {4, 16384, 4096}, {2, 300, 4096}};

std::string cell_args(const Cell& c) {
  return std::to_string(c.tp) + " " + std::to_string(c.tokens) + " " + std::to_string(c.hidden);
}

// What `arfit predict --json` (the installed one) says for one strategy of a cell.
nlohmann::json cli_prediction(const Cell& c, const std::string& strategy) {
  const auto r = run_command(quoted(kPrefix / "bin" / "arfit") + " predict " + kModels +
                             " --collective allreduce --strategy " + strategy + " --nranks " + std::to_string(c.tp) +
                             " --tokens " + std::to_string(c.tokens) + " --hidden " + std::to_string(c.hidden) +
                             " --dtype bf16 --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  EXPECT_EQ(j.size(), 1u);
  return j.at(0);
}

void expect_same_as_cli(const fs::path& program, const char* build) {
  for (const Cell& c : kCells) {
    const auto r = run_command(quoted(program) + " " + kModels + " " + cell_args(c));
    ASSERT_EQ(r.exit_code, 0) << build << ": " << r.output;
    const CellAnswer a = parse_answer(r.output);
    ASSERT_EQ(a.strategies.size(), 3u) << build << ": " << r.output;  // NCCL, ONESHOT, TWOSHOT
    std::string fastest;
    for (const auto& [strategy, line] : a.strategies) {
      const nlohmann::json p = cli_prediction(c, strategy);
      // The same library code on the same models file: equal to the last bit (both print round-trip digits).
      EXPECT_EQ(line.time_us, p.at("time_us").get<double>()) << build << " " << strategy << " " << cell_args(c);
      EXPECT_EQ(line.lo_us, p.at("lo_us").get<double>()) << build << " " << strategy;
      EXPECT_EQ(line.hi_us, p.at("hi_us").get<double>()) << build << " " << strategy;
      EXPECT_EQ(line.how, p.at("how").get<std::string>()) << build << " " << strategy;
      EXPECT_LT(line.lo_us, line.time_us);
      EXPECT_GT(line.hi_us, line.time_us);
      if (fastest.empty() || line.time_us < a.strategies.at(fastest).time_us) fastest = strategy;
    }
    EXPECT_EQ(a.choice, fastest) << build << " " << cell_args(c);
  }
}

TEST(Install, InstalledTreeHasToolsLibrariesHeadersAndPackageFiles) {
  for (const char* rel : {"bin/arfit", "bin/arbench", "lib/libarfit_model.a", "lib/libarfit_fit.a",
                          "lib/libarfit_codegen.a", "include/arfit/model/model_set.h", "include/arfit/codegen/codegen.h",
                          "lib/cmake/arfit/arfitConfig.cmake", "lib/cmake/arfit/arfitConfigVersion.cmake",
                          "lib/cmake/arfit/arfitTargets.cmake", "lib/pkgconfig/arfit-model.pc"})
    EXPECT_TRUE(fs::exists(kPrefix / rel)) << rel;
  // Nothing of the build or source tree leaks into the install (tests, fuzzers, sources).
  for (const auto& e : fs::recursive_directory_iterator(kPrefix)) {
    const std::string ext = e.path().extension().string();
    EXPECT_NE(ext, ".cpp") << e.path();
    EXPECT_EQ(e.path().string().find("fuzz"), std::string::npos) << e.path();
  }
  // The package names the installed prefix only, never the build or source directory.
  const std::string targets = arfit::testing::slurp((kPrefix / "lib/cmake/arfit/arfitTargets.cmake").string());
  EXPECT_EQ(targets.find(ARFIT_SOURCE_DIR), std::string::npos);
}

TEST(Install, EmbeddedModelLibraryPredictsExactlyAsArfitPredict) {
  expect_same_as_cli(kWork / "embed" / "choose_allreduce", "cmake consumer");
}

// The codegen request API (arfit::codegen, with Ceres and the rest found through the package) chooses each cell
// as the model-library example does: the fastest predicted strategy.
TEST(Install, CodegenRequestApiChoosesTheFastestStrategyOfTheCell) {
  for (const Cell& c : kCells) {
    if ((c.tokens & (c.tokens - 1)) != 0) continue;  // codegen's axes are powers of two
    const auto model_only = run_command(quoted(kWork / "embed" / "choose_allreduce") + " " + kModels + " " + cell_args(c));
    ASSERT_EQ(model_only.exit_code, 0) << model_only.output;
    const auto table = run_command(quoted(kWork / "embed" / "table_cell") + " " + kModels + " " + cell_args(c));
    ASSERT_EQ(table.exit_code, 0) << table.output;
    std::istringstream in(table.output);
    std::string word, choice, runner_up;
    in >> word >> choice >> word >> runner_up;
    EXPECT_EQ(choice, parse_answer(model_only.output).choice) << cell_args(c) << ": " << table.output;
    EXPECT_NE(runner_up, choice);
    EXPECT_NE(runner_up, "-");  // three strategies are modelled in every cell of the fixture
  }
  // A cell off codegen's grid is refused, naming the option.
  const auto off = run_command(quoted(kWork / "embed" / "table_cell") + " " + kModels + " 2 300 4096");
  EXPECT_EQ(off.exit_code, 1);
  EXPECT_NE(off.output.find("--tokens"), std::string::npos) << off.output;
}

TEST(Install, EveryInstalledHeaderCompilesAgainstTheFoundComponents) {
  // Built by the fixture; running it proves it linked every component with their dependencies.
  const auto r = run_command(quoted(kWork / "all_headers" / "all_headers"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
}

TEST(Install, PkgConfigBuildsTheSameProgram) {
  TempDir tmp;
  const std::string pc = "PKG_CONFIG_PATH=" + quoted(kPrefix / "lib" / "pkgconfig");
  const auto flags = run_command(pc + " pkg-config --cflags --libs arfit-model");
  ASSERT_EQ(flags.exit_code, 0) << flags.output;
  const fs::path program = tmp.path() / "choose_allreduce_pc";
  const auto cc = run_command("c++ -std=c++17 -O1 " + quoted(fs::path(ARFIT_SOURCE_DIR) / "examples/embed/choose_allreduce.cpp") +
                              " -o " + quoted(program) + " $(" + pc + " pkg-config --cflags --libs arfit-model)");
  ASSERT_EQ(cc.exit_code, 0) << cc.output;
  expect_same_as_cli(program, "pkg-config build");
}

// A consumer asking for another major version, or for a component arfit does not have, is refused at configure time.
TEST(Install, PackageRefusesOtherMajorVersionsAndUnknownComponents) {
  TempDir tmp;
  auto configure = [&](const std::string& find) {
    const fs::path dir = tmp.path() / std::to_string(std::hash<std::string>{}(find));
    fs::create_directories(dir);
    tmp.write(dir.filename().string() + "/CMakeLists.txt",
              "cmake_minimum_required(VERSION 3.24)\nproject(p LANGUAGES CXX)\n" + find + "\n");
    return run_command(std::string(ARFIT_CMAKE_COMMAND) + " -S " + quoted(dir) + " -B " + quoted(dir / "b") +
                       " -DCMAKE_PREFIX_PATH=" + quoted(kPrefix));
  };
  EXPECT_EQ(configure("find_package(arfit 0.1 REQUIRED COMPONENTS model)").exit_code, 0);
  const auto major = configure("find_package(arfit 1.0 REQUIRED)");
  EXPECT_NE(major.exit_code, 0);
  EXPECT_NE(major.output.find("0.1.0"), std::string::npos) << major.output;  // names the version it found
  const auto unknown = configure("find_package(arfit REQUIRED COMPONENTS model kernels_on_mars)");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.output.find("kernels_on_mars"), std::string::npos) << unknown.output;
}

TEST(Install, CpackBuildsDebianPackagesWithTheLinkedLibrariesAsDepends) {
  TempDir tmp;
  const auto r = run_command("cd " + quoted(ARFIT_BUILD_DIR) + " && " + ARFIT_CPACK_COMMAND + " -G DEB -B " +
                             quoted(tmp.path()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  fs::path tools, dev;
  for (const auto& e : fs::directory_iterator(tmp.path())) {
    const std::string name = e.path().filename().string();
    if (name.rfind("arfit-dev_", 0) == 0 && e.path().extension() == ".deb") dev = e.path();
    else if (name.rfind("arfit_", 0) == 0 && e.path().extension() == ".deb") tools = e.path();
  }
  ASSERT_FALSE(tools.empty()) << r.output;
  ASSERT_FALSE(dev.empty()) << r.output;

  const auto depends = run_command("dpkg-deb -f " + quoted(tools) + " Depends").output;
  // dpkg-shlibdeps maps each shared library the programs link to its Debian package (Debian's Ceres is a static
  // library, so its own shared dependencies such as glog appear instead).
  for (const char* package : {"libc6", "libstdc++6", "libopenmpi", "libre2", "libgoogle-glog", "libboost-iostreams"})
    EXPECT_NE(depends.find(package), std::string::npos) << package << " missing from Depends: " << depends;
  const auto tools_files = run_command("dpkg-deb -c " + quoted(tools)).output;
  EXPECT_NE(tools_files.find("./usr/bin/arfit"), std::string::npos) << tools_files;
  EXPECT_NE(tools_files.find("./usr/bin/arbench"), std::string::npos) << tools_files;

  const auto dev_depends = run_command("dpkg-deb -f " + quoted(dev) + " Depends").output;
  EXPECT_NE(dev_depends.find("arfit (= 0.1.0)"), std::string::npos) << dev_depends;
  EXPECT_NE(dev_depends.find("libceres-dev"), std::string::npos) << dev_depends;
  const auto dev_files = run_command("dpkg-deb -c " + quoted(dev)).output;
  EXPECT_NE(dev_files.find("./usr/lib/cmake/arfit/arfitConfig.cmake"), std::string::npos) << dev_files;
  EXPECT_NE(dev_files.find("./usr/include/arfit/model/model_set.h"), std::string::npos) << dev_files;
}

}  // namespace
