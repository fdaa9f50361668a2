// The robustness label: one test per class of bad input and fault of issue #16. Each runs the built arfit
// (or, where a process must be killed or MPI would be needed, the library function in a child process) and
// asserts the exit code (0 ok, 1 bad data or failed run, 2 usage), that the message names file:line or the
// option, and the folder afterwards: inputs byte-identical, no temporary file or partial output left.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <tuple>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <vector>

#include <nlohmann/json.hpp>

#include "bench/options.h"
#include "bench/reporter.h"
#include "io/input_file.h"
#include "io/output_path_rule.h"
#include "io/atomic_output.h"
#include "model/errors.h"
#include "model/sample_csv.h"
#include "robustness_support.h"
#include "test_support.h"

namespace fs = std::filesystem;
using arfit::testing::arfit_bin;
using arfit::testing::CommandResult;
using arfit::testing::expect_killed_mid_write;
using arfit::testing::expect_unchanged;
using arfit::testing::names_file_line;
using arfit::testing::run_command;
using arfit::testing::slurp;
using arfit::testing::snapshot;
using arfit::testing::synthetic_samples;
using arfit::testing::TempDir;

namespace {

const std::string kProfile = std::string(ARFIT_SOURCE_DIR) + "/tests/trace/data/vllm_tp2_small.json";
const std::string kNsysKernSum = std::string(ARFIT_SOURCE_DIR) + "/tests/trace/data/nsys_kern_sum.csv";

// An nccl-tests all_reduce_perf log (4 ranks, 3 sizes).
const std::string kNcclTestsLog =
    "# nThread 1 nGpus 4 minBytes 1024 maxBytes 4096 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1\n"
    "#\n"
    "# Using devices\n"
    "#  Rank  0 Group  0 Pid   1000 on   nodeA device  0 [0000:01:00] Fancy GPU 9000\n"
    "#  Rank  1 Group  0 Pid   1000 on   nodeA device  1 [0000:02:00] Fancy GPU 9000\n"
    "#  Rank  2 Group  0 Pid   1000 on   nodeA device  2 [0000:03:00] Fancy GPU 9000\n"
    "#  Rank  3 Group  0 Pid   1000 on   nodeA device  3 [0000:04:00] Fancy GPU 9000\n"
    "#\n"
    "#                                                              out-of-place                       in-place\n"
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n"
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)\n"
    "        1024           256     float     sum      -1    20.00    0.05    0.08      0    21.00    0.05    0.07      0\n"
    "        2048           512     float     sum      -1    25.00    0.08    0.12      0    26.00    0.08    0.12      0\n"
    "        4096          1024     float     sum      -1    40.00    0.10    0.15      0    41.00    0.10    0.15      0\n"
    "# Out of bounds values : 0 OK\n";

// The table header of kNcclTestsLog (everything before the first data row).
std::string nccl_tests_header() { return kNcclTestsLog.substr(0, kNcclTestsLog.find("        1024")); }

class Robustness : public ::testing::Test {
 protected:
  // One fitted models file for the whole suite (fitting is the slow part).
  static void SetUpTestSuite() {
    fixture_ = new TempDir;
    fixture_->write("samples.csv", synthetic_samples());
    const CommandResult r = run_command(arfit_bin() + " fit " + fixture_->file("samples.csv") + " -o " + fixture_->file("models.json") + " -q");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() {
    delete fixture_;
    fixture_ = nullptr;
  }

  // Copies a fixture file into this test's folder.
  std::string copy(const std::string& name) {
    fs::copy_file(fixture_->file(name), dir.file(name), fs::copy_options::overwrite_existing);
    return dir.file(name);
  }
  nlohmann::json models() const { return nlohmann::json::parse(slurp(fixture_->file("models.json"))); }
  std::string write_models(const std::string& name, const nlohmann::json& j) { return dir.write(name, j.dump(1) + "\n"); }

  // Runs arfit with `args` in this test's folder.
  CommandResult arfit_here(const std::string& args) const {
    return run_command("cd " + dir.path().string() + " && " + arfit_bin() + " " + args);
  }

  // Runs `args` in this test's folder and checks the exit code, that the output holds every `needles`
  // string, and that the folder is unchanged.
  CommandResult expect_refused(const std::string& args, int exit_code, const std::vector<std::string>& needles) {
    return arfit::testing::expect_refused_in(dir, args, exit_code, needles);
  }

  static TempDir* fixture_;
  TempDir dir;
};

TempDir* Robustness::fixture_ = nullptr;

bool have_gnuplot() { return run_command("command -v ${ARFIT_GNUPLOT:-gnuplot}").exit_code == 0; }

}  // namespace

// ---------------------------------------------------------------- crashes and hangs

// A models file holding 160,000 nested arrays overflowed the stack of every command that loads models; a
// vLLM profile, an nccl-tests JSON log and a rule file nested as deep go through the same loading path.
TEST_F(Robustness, DeepJsonNestingIsAnErrorNotACrash) {
  nlohmann::json m = models();
  std::string text = m.dump();
  const std::string deep = std::string(160000, '[') + std::string(160000, ']');
  text.insert(text.size() - 1, ",\"extra\":" + deep);
  dir.write("deep.json", text);
  copy("samples.csv");
  std::vector<std::string> commands = {
      "predict deep.json --collective allreduce --bytes 1M --nranks 8",
      "codegen deep.json --format json -o table.json",
      "suggest deep.json",
      "whatif " + kProfile + " --models deep.json --tp 8 --hidden 4096",
  };
  if (have_gnuplot()) commands.push_back("plot heatmap deep.json -o figures");
  for (const auto& c : commands) {
    const CommandResult r = expect_refused(c, 1, {"deep.json:1:", "nested deeper than"});
    EXPECT_EQ(r.output.find("Segmentation"), std::string::npos) << r.output;
  }
  dir.write("deep_profile.json", "{\"context\": {}, \"prefill\": " + deep + "}");
  expect_refused("breakdown deep_profile.json -o out --no-figures", 1, {"deep_profile.json:1:", "nested deeper than"});
  dir.write("deep_nccl.json", "{\"results\": " + deep + "}");
  expect_refused("ingest deep_nccl.json --format nccl-tests-json", 1, {"deep_nccl.json:1:", "nested deeper than"});
  dir.write("deep_rules.json", "{\"rules\": " + deep + "}");
  const CommandResult rules = expect_refused("breakdown " + kProfile + " --rules deep_rules.json -o out --no-figures", 1, {});
  EXPECT_TRUE(names_file_line(rules.output, "deep_rules.json")) << rules.output;
}

// ---------------------------------------------------------------- inputs destroyed or modified

// An output path naming an input — the same spelling, a relative path, a hard link, a symbolic link — is
// refused before anything is written.
TEST_F(Robustness, OutputNamingAnInputIsRefused) {
  copy("samples.csv");
  copy("models.json");
  fs::copy_file(kProfile, dir.file("profile.json"));
  fs::create_hard_link(dir.file("samples.csv"), dir.file("hardlink.csv"));
  fs::create_symlink("samples.csv", dir.file("symlink.csv"));
  const std::string input = "is an input of this run";
  expect_refused("fit samples.csv -o samples.csv", 2, {"samples.csv: " + input});
  expect_refused("fit samples.csv -o ./samples.csv", 2, {"./samples.csv: " + input});
  expect_refused("fit samples.csv -o hardlink.csv", 2, {"hardlink.csv: " + input});
  expect_refused("fit samples.csv -o symlink.csv", 2, {"symlink.csv: " + input});
  expect_refused("ingest samples.csv -o samples.csv", 2, {"samples.csv: " + input});
  expect_refused("codegen models.json --format json -o models.json", 2, {"models.json: " + input});
  expect_refused("suggest models.json --json models.json", 2, {"models.json: " + input});
  expect_refused("eval samples.csv --protocol interp2 --json samples.csv", 2, {"samples.csv: " + input});
  expect_refused("eval samples.csv --protocol interp2 --json e.json --points e.json", 2, {"--json and --points"});
  expect_refused("whatif profile.json --models models.json --tp 8 --hidden 4096 -o profile.json", 2, {"profile.json: " + input});
  expect_refused("whatif profile.json --models models.json --tp 8 --hidden 4096 -o models.json", 2, {"models.json: " + input});
}

// A device node, a FIFO, a directory, a read-only file and a dangling link are refused and stay as they were; a
// symbolic link to a regular file is followed: the file is replaced (keeping its mode), the link kept.
TEST_F(Robustness, NonRegularOutputsAreRefusedAndLinksFollowed) {
  copy("samples.csv");
  ASSERT_EQ(::mkfifo(dir.file("out.fifo").c_str(), 0644), 0);
  fs::create_directory(dir.file("folder"));
  dir.write("readonly.csv", "keep me\n");
  fs::permissions(dir.file("readonly.csv"), fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read);
  fs::create_symlink("nowhere.csv", dir.file("dangling.csv"));
  expect_refused("ingest samples.csv -o out.fifo", 2, {"out.fifo: is a FIFO"});
  expect_refused("ingest samples.csv -o folder", 2, {"folder: is a directory"});
  expect_refused("ingest samples.csv -o readonly.csv", 2, {"readonly.csv: is read-only (mode 0444)"});
  expect_refused("ingest samples.csv -o dangling.csv", 2, {"dangling.csv: is a symbolic link to a missing file"});
  struct stat null_before {};
  ASSERT_EQ(::stat("/dev/null", &null_before), 0);
  expect_refused("ingest samples.csv -o /dev/null", 2, {"/dev/null: is a character device"});
  struct stat null_after {};
  ASSERT_EQ(::stat("/dev/null", &null_after), 0);
  EXPECT_TRUE(S_ISCHR(null_after.st_mode));
  EXPECT_EQ(null_after.st_ino, null_before.st_ino);

  dir.write("target.csv", "old\n");
  fs::permissions(dir.file("target.csv"), fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  fs::create_symlink("target.csv", dir.file("link.csv"));
  const CommandResult r = run_command("cd " + dir.path().string() + " && " + arfit_bin() + " ingest samples.csv -o link.csv -q");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::is_symlink(dir.file("link.csv")));
  EXPECT_EQ(fs::read_symlink(dir.file("link.csv")), "target.csv");
  EXPECT_EQ(slurp(dir.file("target.csv")).rfind("#arfit-samples v1\n", 0), 0u);
  EXPECT_EQ(fs::status(dir.file("target.csv")).permissions(), fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  for (const auto& e : fs::directory_iterator(dir.path())) EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << e.path();
}

// Outputs other programs produce (gnuplot's images) and reports assembled in a staging folder (breakdown) pass
// the same rule: a read-only figure or report file is refused before anything in the folder is replaced.
TEST_F(Robustness, FiguresAndReportFilesFollowTheOutputRule) {
  copy("models.json");
  fs::copy_file(kProfile, dir.file("profile.json"));
  const auto read_only = fs::perms::owner_read | fs::perms::group_read | fs::perms::others_read;
  auto expect_folder_refused = [&](const std::string& args, const fs::path& folder, const std::string& file) {
    fs::permissions(folder / file, read_only);
    const auto before = snapshot(folder);
    const CommandResult r = run_command("cd " + dir.path().string() + " && " + arfit_bin() + " " + args);
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(file + ": is read-only"), std::string::npos) << r.output;
    expect_unchanged(before, folder, args);
  };
  // breakdown: every destination is checked before the first is replaced.
  ASSERT_EQ(run_command("cd " + dir.path().string() + " && " + arfit_bin() + " breakdown profile.json -o report --no-figures").exit_code, 0);
  expect_folder_refused("breakdown profile.json -o report --no-figures", dir.path() / "report", "unmatched_kernels.csv");
  if (!have_gnuplot()) return;
  // plot: gnuplot renders into a registered temporary that replaces the image only if the rule allows.
  const CommandResult first = run_command("cd " + dir.path().string() + " && " + arfit_bin() + " plot heatmap models.json -o figures");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  std::string png;
  for (const auto& e : fs::directory_iterator(dir.path() / "figures"))
    if (e.path().extension() == ".png") png = e.path().filename().string();
  ASSERT_FALSE(png.empty()) << first.output;
  expect_folder_refused("plot heatmap models.json -o figures", dir.path() / "figures", png);
}

// arbench --resume used to cut the partial last line of a file it then refused. Now the whole file is checked
// in memory first: a refused file keeps every byte; an accepted journal is cut only then, an output never.
TEST_F(Robustness, ResumeValidatesBeforeTouchingTheFile) {
  using arfit::bench::GridError;
  using arfit::bench::inspect_output;
  const std::string grid = "{\"backend\":\"host\"}";
  const std::string written = arfit::samples_csv_preamble({{"grid", "{\"backend\":\"other\"}"}}, {"note"}) +
                              "allreduce,MPI,NONE,bf16,2,1,,,,,1024,5,";  // a kill in mid-row
  const std::string other_grid = dir.write("other_grid.csv", written);
  EXPECT_THROW(inspect_output(other_grid, grid, /*resume=*/true, /*overwrite=*/false), GridError);
  EXPECT_EQ(slurp(other_grid), written);
  const std::string garbage = dir.write("garbage.csv", "not a sample file\nsecond line, cut");
  try {
    inspect_output(garbage, grid, true, false);
    ADD_FAILURE() << "garbage accepted";
  } catch (const arfit::InputError& e) {
    EXPECT_TRUE(names_file_line(e.what(), garbage)) << e.what();
    EXPECT_NE(std::string(e.what()).find("--resume"), std::string::npos) << e.what();
  }
  EXPECT_EQ(slurp(garbage), "not a sample file\nsecond line, cut");
  // The same file with this run's grid is continued: the output itself is never cut (the run continues a
  // copy in its journal, ok.csv.partial, moved over it at the end); a journal of a killed run is cut, then
  // and only then.
  std::string same = written;
  same.replace(same.find("{\"backend\":\"other\"}"), 19, grid);
  const std::string ok = dir.write("ok.csv", same);
  const auto st = inspect_output(ok, grid, true, false);
  EXPECT_TRUE(st.resumed());
  EXPECT_EQ(st.copied_output, same.substr(0, same.rfind('\n') + 1));
  EXPECT_EQ(slurp(ok), same);
  const std::string journal = dir.write("ok.csv.partial", same);
  EXPECT_TRUE(inspect_output(ok, grid, true, false).resumed());
  EXPECT_EQ(slurp(journal), same.substr(0, same.rfind('\n') + 1));
}

// SIGINT / SIGTERM / SIGHUP during a write: the handler removes the temporary file and the process still dies
// of the signal. Checked in child processes that signal themselves in the middle of write_file_atomically.
TEST_F(Robustness, SignalsRemoveTemporaryFiles) {
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    const std::string out = dir.file("out" + std::to_string(sig) + ".csv");
    expect_killed_mid_write(sig, [&] {
      arfit::write_file_atomically(out, [&](std::ostream& os) {
        os << std::string(1 << 20, 'x');
        os.flush();
        std::ifstream probe(out + ".tmp." + std::to_string(::getpid()));
        if (!probe) std::_Exit(10);  // the temporary file must exist at this point
        ::raise(sig);
        std::_Exit(11);  // not reached: the signal's default action ends the process
      });
    });
    EXPECT_TRUE(fs::is_empty(dir.path())) << "signal " << sig << " left " << fs::directory_iterator(dir.path())->path();
  }
}

// A write past the file-size limit (ulimit -f) raises SIGXFSZ, whose default action ended the process in the middle
// of the write and left NAME.tmp.PID (arbench --json under `ulimit -f` did). Any program writing through
// io/atomic_output (arbench, an embedding program: not only arfit's main) now has the signal caught from its first
// temporary on: the write fails with EFBIG, said as the system's reason, and the temporary is removed. The limit is
// set in a child process, which then writes 1 MiB atomically and reports what happened by its exit code.
TEST_F(Robustness, FileSizeLimitFailsTheWriteAndRemovesTheTemporaryFile) {
  const std::string out = dir.file("big.json");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    const struct rlimit limit {4096, 4096};
    if (::setrlimit(RLIMIT_FSIZE, &limit) != 0) std::_Exit(10);
    try {
      arfit::write_string_atomically(out, std::string(1 << 20, 'x'));
    } catch (const std::runtime_error& e) {
      std::_Exit(std::string(e.what()).find("big.json: cannot write: File too large") != std::string::npos ? 0 : 12);
    }
    std::_Exit(11);  // the write past the limit succeeded?
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "ended by signal " << (WIFSIGNALED(status) ? WTERMSIG(status) : 0);
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: no limit, 11: no failure, 12: another message";
  EXPECT_TRUE(fs::is_empty(dir.path())) << "left " << fs::directory_iterator(dir.path())->path();
}

// ---------------------------------------------------------------- silently wrong

// Integers beyond their type are errors naming the place, never wrapped: CSV columns, JSON keys, options.
TEST_F(Robustness, IntegersBeyondTheirTypeAreErrors) {
  const std::string head = "#arfit-samples v1\ncollective,strategy,fusion,dtype,nranks,bytes,time_us,iterations\n";
  dir.write("ranks.csv", head + "allreduce,NCCL,NONE,bf16,4294967297,1024,10,5\n");
  expect_refused("ingest ranks.csv", 1, {"ranks.csv:3: column 'nranks': '4294967297'"});
  dir.write("iters.csv", head + "allreduce,NCCL,NONE,bf16,2,1024,10,1099511627777\n");
  expect_refused("ingest iters.csv", 1, {"iters.csv:3: column 'iterations'"});
  nlohmann::json m = models();
  m["groups"][0]["key"]["nranks"] = 4294967297LL;
  write_models("ranks.json", m);
  const CommandResult r = expect_refused("predict ranks.json --collective allreduce --bytes 1M", 1, {"/groups/0/key/nranks", "4294967297"});
  EXPECT_TRUE(names_file_line(r.output, "ranks.json")) << r.output;
  m = models();
  m["schema_version"] = (1LL << 40) + 1;
  write_models("version.json", m);
  const CommandResult v = expect_refused("predict version.json --collective allreduce --bytes 1M", 1, {"/schema_version"});
  EXPECT_TRUE(names_file_line(v.output, "version.json")) << v.output;
  copy("models.json");
  expect_refused("predict models.json --collective allreduce --tokens 1e20 --hidden 4096", 2, {"--tokens", "1e20"});
  dir.write("sizes_allreduce.json",
            "{\"args\": [\"all_reduce_perf\"], \"config\": {\"iterations\": 1099511627777, \"devices\": [{}, {}]},\n"
            " \"results\": [{\"size\": 1024, \"out_of_place\": {\"time\": 5}}]}\n");
  expect_refused("ingest sizes_allreduce.json", 1, {"sizes_allreduce.json:1: /config/iterations"});
  dir.write("huge_allreduce.json",
            "{\"args\": [\"all_reduce_perf\"], \"config\": {\"devices\": [{}, {}]},\n"
            " \"results\": [\n  {\"size\": 18446744073709551615, \"out_of_place\": {\"time\": 5}}]}\n");
  expect_refused("ingest huge_allreduce.json", 1, {"huge_allreduce.json:3: /results/0/size"});
}

// Hand-edited models files: every value the predictions depend on is checked on load (exit 1, file:line and
// the key path) instead of giving nan/inf, lo90 > hi90 or tables that fall back in every cell.
TEST_F(Robustness, HandEditedModelsAreValidated) {
  struct Edit {
    const char* pointer;
    nlohmann::json value;
  };
  const std::vector<Edit> edits = {
      {"/groups/0/bus_factor", 0},
      {"/groups/0/bus_factor", -1.75},
      {"/groups/0/params/0", 1e6},             // ln alpha far outside the family's bounds
      {"/groups/0/params/1", "fast"},
      {"/groups/0/interval/sigma_in", -0.02},  // negative sigma
      {"/groups/0/interval/sigma_out_per_octave", -1},
      {"/groups/0/range/max_bytes", 1},        // reversed range
      {"/groups/0/range/min_bytes", 0},
      {"/groups/0/key/nranks", 0},
      {"/groups/0/key/nnodes", -1},
      {"/groups/0/key/collective", "allmagic"},
      {"/groups/0/tail/b_us_per_byte", -1e-3},
      // Within +-700 but the corrected time at the knot, a measured time, is 1e304 us: predict printed 1e307 us
      // with an upper bound of null (inf), or 1e-304 us with a bus bandwidth of null, exit 0.
      {"/groups/0/correction/log_resid/0", 700},
      {"/groups/0/correction/log_resid/3", -700},
      {"/groups/0/sm", 1e12},
      // Optional parts of the wrong type are a broken file, not a fit without them.
      {"/groups/0/correction", "x"},
      {"/groups/0/tail", nlohmann::json::array({1, 2})},
      {"/groups/0/transfer", 3},
      // A line break in a name would end a comment of a generated table or a figure script.
      {"/groups/0/key/system", "sysA\nsystem \"id\""},
      {"/groups/0/key/strategy", "NC\u0001CL"},
  };
  for (const auto& e : edits) {
    nlohmann::json m = models();
    m[nlohmann::json::json_pointer(e.pointer)] = e.value;
    write_models("edited.json", m);
    const CommandResult r = expect_refused("predict edited.json --collective allreduce --bytes 1M --nranks 8", 1, {e.pointer});
    EXPECT_TRUE(names_file_line(r.output, "edited.json")) << e.pointer << "\n" << r.output;
    EXPECT_EQ(r.output.find("nan"), std::string::npos) << r.output;
    fs::remove(dir.file("edited.json"));
  }
  {
    // A spike's residual likewise: fit --prior carried one of +700 into a new machine's curve (1.6e84 us).
    nlohmann::json m = models();
    m["groups"][0]["correction"]["spike_bytes"] = {3000};
    m["groups"][0]["correction"]["spike_log_resid"] = {700};
    write_models("spike.json", m);
    const CommandResult spike = expect_refused("predict spike.json --collective allreduce --bytes 1M --nranks 8", 1,
                                               {"/groups/0/correction/spike_log_resid/0: puts the time at spike 0 (3000 bytes)"});
    EXPECT_TRUE(names_file_line(spike.output, "spike.json")) << spike.output;
    fs::remove(dir.file("spike.json"));
  }
  // Non-finite numbers cannot be written in JSON; one beyond double is refused by the parser, naming the line.
  std::string text = models().dump(1);
  text.replace(text.find("\"bus_factor\": ") + 14, 4, "1e999");
  dir.write("overflow.json", text);
  const CommandResult r = expect_refused("predict overflow.json --collective allreduce --bytes 1M --nranks 8", 1, {"overflow.json", "1e999"});
  EXPECT_EQ(r.output.find("[json.exception"), std::string::npos) << r.output;
}

// The seed family's band is not clipped to the physical bounds outside the measured range, so a sigma_out_per_octave
// at its bound (50) carried 60 octaves made a half-width past e^709: hi_us null (inf) and lo_us 0 in --json with
// exit 0. The 90 % half-width stops at ln(1e9 / 1e-6), every time a sample can have.
TEST_F(Robustness, ExtremeSigmasKeepIntervalsFinite) {
  copy("samples.csv");
  const CommandResult fitted = run_command(arfit_bin() + " fit " + dir.file("samples.csv") + " --family seed -o " + dir.file("seed.json") + " -q");
  ASSERT_EQ(fitted.exit_code, 0) << fitted.output;
  nlohmann::json m = nlohmann::json::parse(slurp(dir.file("seed.json")));
  for (auto& g : m["groups"]) {
    g["interval"]["sigma_in"] = 50;
    g["interval"]["sigma_out_per_octave"] = 50;
    g["interval"]["z"] = 10;
  }
  write_models("wide.json", m);
  const CommandResult r = run_command(arfit_bin() + " predict " + dir.file("wide.json") + " --collective allreduce --nranks 8 --bytes 1,1M,1e18 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& p : nlohmann::json::parse(r.output)) {
    ASSERT_TRUE(p["hi_us"].is_number() && p["lo_us"].is_number()) << p.dump();
    EXPECT_GT(p["lo_us"].get<double>(), 0) << p.dump();
    EXPECT_LE(p["lo_us"].get<double>(), p["time_us"].get<double>()) << p.dump();
    EXPECT_LE(p["time_us"].get<double>(), p["hi_us"].get<double>()) << p.dump();
    EXPECT_LT(p["hi_us"].get<double>() / p["time_us"].get<double>(), 1e15 * 1.0001) << p.dump();
  }
}

// One command's output given to another by mistake is refused for what it is: a models file given to fit said
// "column 'results': missing 'results' list", a sample CSV given to predict "invalid JSON at column 1", a codegen json
// table "missing key 'schema'".
TEST_F(Robustness, ArfitOutputsGivenAsTheWrongInputAreNamed) {
  copy("models.json");
  copy("samples.csv");
  for (const auto& [format, out] : {std::pair<std::string, std::string>{"json", "table.json"}, {"header", "select.h"}}) {
    const CommandResult r = run_command("cd " + dir.path().string() + " && " + arfit_bin() + " codegen models.json --format " + format + " -o " + out);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  // arbench's --json records (bandwidths and all) given to fit: the sample CSV it writes with -o is what arfit reads.
  arfit::bench::JsonReporter records(dir.file("records.json"));
  records.start({{"generator", std::string("arbench ") + ARFIT_VERSION}}, 0, 0);
  arfit::OutputSet outputs;
  records.finish({}, outputs);
  outputs.commit();
  expect_refused("fit records.json -o out.json", 1,
                 {"records.json: arbench's JSON records (written by `arbench --json`), not measurements: arfit reads the sample CSV"});
  expect_refused("fit models.json -o out.json", 1, {"models.json: an arfit models file (written by `arfit fit`), not measurements"});
  expect_refused("ingest table.json -o out.csv", 1, {"table.json: a file generated by arfit codegen, not measurements"});
  expect_refused("fit samples.csv select.h -o out.json", 1, {"select.h: a file generated by arfit codegen, not measurements"});
  expect_refused("fit samples.csv --prior table.json -o out.json", 1, {"table.json: a file generated by arfit codegen, not measurements"});
  expect_refused("predict samples.csv --collective allreduce --bytes 1M --nranks 8", 1,
                 {"samples.csv: an arfit sample CSV", "not a models file: fit it first (arfit fit samples.csv -o models.json)"});
  expect_refused("codegen table.json --format json -o t2.json", 1, {"table.json: a file generated by arfit codegen, not a models file"});
  expect_refused("suggest select.h", 1, {"select.h: a file generated by arfit codegen, not a models file"});
  // As the profile of breakdown or whatif.
  expect_refused("whatif models.json --models models.json --tp 8 --hidden 4096", 1,
                 {"models.json: an arfit models file (written by `arfit fit`), not a profile"});
  expect_refused("breakdown samples.csv -o out --no-figures", 1, {"samples.csv: an arfit sample CSV (written by `arfit ingest` or arbench), not a profile"});
  // Reports without a generator field: told by their keys.
  ASSERT_EQ(run_command(arfit_bin() + " suggest " + dir.file("models.json") + " --json " + dir.file("suggest.json")).exit_code, 0);
  expect_refused("codegen suggest.json --format json -o t2.json", 1, {"suggest.json: an arfit suggest list (written by `arfit suggest --json`), not a models file"});
  ASSERT_EQ(run_command(arfit_bin() + " eval " + dir.file("samples.csv") + " --protocol interp2 --json " + dir.file("eval.json")).exit_code, 0);
  expect_refused("fit eval.json -o out.json", 1, {"eval.json: an arfit eval report (written by `arfit eval --json`), not measurements"});
}

// Two groups of one key: the second was shadowed by the first without a word (predict answered from the other
// curve).
TEST_F(Robustness, ModelsWithTwoGroupsOfOneKeyAreRefused) {
  nlohmann::json m = models();
  m["groups"].push_back(m["groups"][0]);
  write_models("twice.json", m);
  const std::string last = "/groups/" + std::to_string(m["groups"].size() - 1) + "/key";
  const CommandResult r = expect_refused("predict twice.json --collective allreduce --bytes 1M --nranks 8", 1,
                                         {last, "the same group as /groups/0"});
  EXPECT_TRUE(names_file_line(r.output, "twice.json")) << r.output;
  // Joint families likewise (two rank counts make one).
  std::string samples = "#arfit-samples v1\ncollective,strategy,nranks,bytes,time_us\n";
  for (int n : {4, 8})
    for (long b = 1024; b <= (64L << 20); b *= 2)
      samples += "allreduce,NCCL," + std::to_string(n) + "," + std::to_string(b) + "," +
                 std::to_string(5.0 * n + static_cast<double>(b) / (50e3 / n)) + "\n";
  const std::string counts = dir.write("counts.csv", samples);
  const CommandResult fitted = run_command(arfit_bin() + " fit " + counts + " -o " + dir.file("counts.json") + " -q");
  ASSERT_EQ(fitted.exit_code, 0) << fitted.output;
  nlohmann::json j = nlohmann::json::parse(slurp(dir.file("counts.json")));
  ASSERT_FALSE(j["joint"].empty());
  j["joint"].push_back(j["joint"][0]);
  write_models("twice_joint.json", j);
  expect_refused("predict twice_joint.json --collective allreduce --bytes 1M --nranks 8", 1,
                 {"/joint/" + std::to_string(j["joint"].size() - 1) + "/key", "the same family as /joint/0"});
  // Without --nranks a file with several GPU counts for the query does not pick one silently (it answered
  // from the first, and printed that count's bus bandwidth without saying so).
  expect_refused("predict counts.json --collective allreduce --bytes 1M", 2, {"--nranks", "2 GPU counts for this query (4, 8)"});
  EXPECT_EQ(run_command(arfit_bin() + " predict " + dir.file("counts.json") + " --collective allreduce --bytes 1M --nranks 4").exit_code, 0);
  // Without --dtype likewise for element types (aiconfigurator's NCCL tables hold fp16 and int8): the query was
  // ambiguous inside predict and answered "no model answers this query", exit 1.
  std::string typed = "#arfit-samples v1\ncollective,strategy,dtype,nranks,bytes,time_us\n";
  for (const char* dtype : {"fp16", "int8"})
    for (long b = 1024; b <= (64L << 20); b *= 2)
      typed += std::string("allreduce,NCCL,") + dtype + ",8," + std::to_string(b) + "," + std::to_string(5.0 + static_cast<double>(b) / 50e3) + "\n";
  const std::string types = dir.write("types.csv", typed);
  ASSERT_EQ(run_command(arfit_bin() + " fit " + types + " -o " + dir.file("types.json") + " -q").exit_code, 0);
  expect_refused("predict types.json --collective allreduce --bytes 1M", 2, {"--dtype: ", "2 element types for this query (fp16, int8); say which"});
  EXPECT_EQ(run_command(arfit_bin() + " predict " + dir.file("types.json") + " --collective allreduce --bytes 1M --dtype int8").exit_code, 0);
}

// A shaped query (--tokens x --hidden) of a type arfit cannot size (nvfp4, a file's own name) is refused naming the
// options and --bytes: it was sized at one byte an element, twice an fp4 message, and answered (exit 0). A type
// arfit sizes (nccl-tests' f8e5m2, one byte) answers at its size, as --bytes of that size does.
TEST_F(Robustness, ShapedQueriesNeedATypeOfKnownSize) {
  for (const char* dtype : {"nvfp4", "f8e5m2"}) {
    std::string typed = "#arfit-samples v1\ncollective,strategy,dtype,nranks,bytes,time_us\n";
    for (long b = 1024; b <= (64L << 20); b *= 2)
      typed += std::string("allreduce,NCCL,") + dtype + ",8," + std::to_string(b) + "," + std::to_string(5.0 + static_cast<double>(b) / 50e3) + "\n";
    const std::string name = std::string(dtype) + ".json";
    ASSERT_EQ(run_command(arfit_bin() + " fit " + dir.write(std::string(dtype) + ".csv", typed) + " -o " + dir.file(name) + " -q").exit_code, 0);
    const std::string shaped = "predict " + name + " --collective allreduce --nranks 8 --tokens 128 --hidden 4096";
    if (std::string(dtype) == "nvfp4") {
      expect_refused(shaped, 2, {"--tokens/--hidden", "'nvfp4'", "--bytes"});
      expect_refused(shaped + " --dtype nvfp4", 2, {"--tokens/--hidden", "'nvfp4'", "--bytes"});
      EXPECT_EQ(run_command(arfit_bin() + " predict " + dir.file(name) + " --collective allreduce --nranks 8 --bytes 256K").exit_code, 0);
    } else {
      const CommandResult by_shape = arfit_here(shaped + " --json");
      const CommandResult by_bytes = arfit_here("predict " + name + " --collective allreduce --nranks 8 --bytes 512K --json");
      ASSERT_EQ(by_shape.exit_code, 0) << by_shape.output;
      ASSERT_EQ(by_bytes.exit_code, 0) << by_bytes.output;
      const auto time_of = [](const std::string& out) {
        return nlohmann::json::parse(out.substr(out.find('[')))[0]["time_us"].get<double>();
      };
      EXPECT_DOUBLE_EQ(time_of(by_shape.output), time_of(by_bytes.output));  // 128 x 4096 x 1 byte = 512 KiB
    }
  }
}

// A DLRM split ("B,T0-T1,D") counts elements: of a type arfit cannot size they are fp32's 4 bytes wherever the
// split is read. predict (and fit's choice of the effective mode) took 1 byte where the samples reader and plot
// took 4, so a sample's own split was predicted at a quarter of its size.
TEST_F(Robustness, DlrmSplitsOfATypeOfUnknownSizeAreFp32) {
  std::string typed = "#arfit-samples v1\ncollective,strategy,dtype,nranks,bytes,time_us\n";
  for (long b = 1024; b <= (64L << 20); b *= 2)
    typed += "alltoall,NCCL,mystery,2," + std::to_string(b) + "," + std::to_string(5.0 + static_cast<double>(b) / 50e3) + "\n";
  ASSERT_EQ(run_command(arfit_bin() + " fit " + dir.write("a2a.csv", typed) + " -o " + dir.file("a2a.json") + " -q").exit_code, 0);
  const CommandResult r = arfit_here("predict a2a.json --collective alltoallv --nranks 2 --splits 8,1-3,4 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Rank r sends 8/2 x T_r x 4 elements of 4 bytes to each of 2 ranks (128 and 384 bytes) and receives 256;
  // max_of_sum, the mode a file without all-to-allv samples keeps: max((128 + 256) / 2, (384 + 256) / 2) = 320.
  const nlohmann::json j = nlohmann::json::parse(r.output.substr(r.output.find('[')));
  EXPECT_DOUBLE_EQ(j[0]["bytes"].get<double>(), 320.0) << r.output;
}

// A device as an input is refused before a byte is read (arfit ingest /dev/zero read 1 GiB before the read limit
// stopped it); an endless stream (a FIFO fed forever) stops at the read limit with the path named, instead of
// filling the memory (arfit ingest /dev/zero grew to 17 GB before bad_alloc). Pipes still read.
TEST_F(Robustness, InputsStopAtTheReadLimit) {
  for (const std::string device : {"/dev/zero", "/dev/null"}) {
    try {
      arfit::read_file(device);
      ADD_FAILURE() << device << " read";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(device + ": is a character device"), std::string::npos) << e.what();
    }
  }
  // On the command line a device is the command line's to correct, as a missing path or a folder is, for every
  // command and input option (it was exit 1 after the options; plot called it "no such file", and a FIFO too).
  for (const char* args : {"ingest /dev/zero -o out.csv", "fit /dev/zero -o m.json", "predict /dev/zero --collective allreduce",
                                  "plot fit /dev/zero -o fig", "breakdown /dev/zero -o out", "codegen /dev/zero -o t.json --format json"})
    expect_refused(args, 2, {"/dev/zero: is a character device, not a file; give a file, a pipe or a FIFO"});
  expect_refused("ingest " + dir.path().string(), 2, {": is a directory, not a file"});
  if (have_gnuplot()) {
    EXPECT_EQ(run_command("cat " + dir.write("pipe.csv", synthetic_samples()) + " | " + arfit_bin() + " plot fit /dev/stdin -o " +
                          dir.file("fig_piped")).exit_code,
              0);
  }
  const std::string log = dir.write("log.txt", kNcclTestsLog);
  const CommandResult piped = run_command("cat " + log + " | " + arfit_bin() + " ingest /dev/stdin --collective allreduce -o " + dir.file("piped.csv"));
  EXPECT_EQ(piped.exit_code, 0) << piped.output;
  const std::string fifo = dir.file("endless.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // The writer's output goes nowhere before it opens the FIFO (blocking until read_file opens it), so the command
  // returns at once.
  ASSERT_EQ(run_command("(head -c 2100000 /dev/zero > " + fifo + " &) > /dev/null 2>&1").exit_code, 0);
  try {
    arfit::read_file(fifo, std::size_t{1} << 20);
    ADD_FAILURE() << "an endless FIFO read whole";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(fifo + ": larger than 1 MiB"), std::string::npos) << e.what();
  }
  // A regular file past the limit is refused before its size is reserved.
  const std::string big = dir.write("big.txt", std::string((std::size_t{1} << 20) + 1, 'x'));
  EXPECT_THROW(arfit::read_file(big, std::size_t{1} << 20), std::runtime_error);
  EXPECT_EQ(arfit::read_file(big, std::size_t{2} << 20).size(), (std::size_t{1} << 20) + 1);
}

// A sample beyond what arfit models is named at the line (or JSON pointer) of the row it came from, whatever the
// format: ingest's bound check said "nt.txt: column 'time_us': ..." with no line.
TEST_F(Robustness, SampleBoundsNameTheRowTheyCameFrom) {
  std::string log = kNcclTestsLog;
  log.replace(log.find("25.00"), 5, "1e308");  // the out-of-place time of the 2048-byte row, line 13
  dir.write("nt.txt", log);
  expect_refused("ingest nt.txt --collective allreduce -o out.csv", 1, {"nt.txt:13: column 'time': time 1e+308 us is outside [1e-06, 1e+09] us"});
  dir.write("nt.json",
            "{\"args\": [\"all_reduce_perf\"],\n"
            " \"config\": {\"devices\": [{\"hostname\": \"h\"}, {\"hostname\": \"h\"}]},\n"
            " \"results\": [\n"
            "  {\"size\": 1024, \"type\": \"float\", \"out_of_place\": {\"time\": 10.0, \"alg_bw\": 0.1, \"bus_bw\": 0.1}},\n"
            "  {\"size\": 2048, \"type\": \"float\",\n"
            "   \"out_of_place\": {\"time\": 1e308, \"alg_bw\": 0.1, \"bus_bw\": 0.1}}]}\n");
  expect_refused("ingest nt.json -o out.csv", 1, {"nt.json:6: /results/1/out_of_place/time: time 1e+308 us is outside"});
  dir.write("aic.csv",
            "framework,version,device,op_name,kernel_source,nccl_dtype,num_gpus,message_size,latency\n"
            "trtllm,1.0,H100,all_reduce,NCCL,bf16,8,1024,0.01\n"
            "trtllm,1.0,H100,all_reduce,NCCL,bf16,8,2048,1e300\n");
  expect_refused("ingest aic.csv -o out.csv", 1, {"aic.csv:3: column 'latency': time 1e+303 us is outside"});
  // The message names the column as the file names it (its time column in ms here), not the sample field.
  dir.write("trt.csv", "world_size,dtype,size,strategy,fusion,time_ms\n8,bf16,1024,NCCL,NONE,0.01\n8,bf16,2048,NCCL,NONE,1e300\n");
  expect_refused("ingest trt.csv --format trtllm -o out.csv", 1, {"trt.csv:3: column 'time_ms': time 1e+303 us is outside"});
  dir.write("s.csv", "#arfit-samples v1\ncollective,strategy,nranks,bytes,time_us\nallreduce,NCCL,8,1024,10\nallreduce,NCCL,8,2048,1e308\n");
  expect_refused("ingest s.csv -o out.csv", 1, {"s.csv:4: column 'time_us': time 1e+308 us is outside"});
  // A name given by an option is checked on every sample, at the first sample's line.
  expect_refused("ingest aic.csv --system \"$(printf 'a\\007b')\" -o out.csv", 1, {"aic.csv:2: column 'system': control character"});
}

// Kernel-rule files (--rules) and NVTX range reports (--nvtx) are checked where they are read: an empty class id
// and a negative range or kernel start were taken.
TEST_F(Robustness, RuleIdsAndRangeStartsAreChecked) {
  const std::string trace = std::string(ARFIT_SOURCE_DIR) + "/tests/trace/data/nsys_gpu_trace.csv";
  dir.write("empty_id.json", "{\"classes\": [{\"id\": \"x\"},\n  {\"id\": \"\"}],\n \"rules\": [{\"class\": \"x\", \"regex\": \"gemm\"}]}\n");
  expect_refused("breakdown " + trace + " --rules empty_id.json -o out", 1, {"empty_id.json:2:", "classes[1].id", "empty"});
  dir.write("empty_class.json", "{\"rules\": [\n  {\"class\": \"\", \"regex\": \"gemm\"}]}\n");
  expect_refused("breakdown " + trace + " --rules empty_class.json -o out", 1, {"empty_class.json:2:", "rules[0].class", "empty"});
  dir.write("nvtx.csv",
            "Name,Projected Start (ns),Projected Duration (ns)\n"
            "execute_model prefill,1000000,1000000\n"
            "execute_model decode,-2100000,400000\n");
  expect_refused("breakdown " + trace + " --nvtx nvtx.csv -o out", 1,
                 {"nvtx.csv:3: column 'Projected Start (ns)': negative range start '-2100000'"});
  // A kernel row with a negative start would land outside every range: refused the same way.
  std::string kernels = arfit::testing::slurp(trace);
  const std::size_t row3 = kernels.find('\n', kernels.find('\n') + 1) + 1;
  kernels.replace(row3, kernels.find(',', row3) - row3, "-1000500");
  dir.write("kernels.csv", kernels);
  expect_refused("breakdown kernels.csv -o out", 1, {"kernels.csv:3: column 'Start (ns)': negative kernel start '-1000500'"});
}

// "-" as an output is standard output where the output is one stream (the data alone there, the report on stderr,
// no temporary file), and a usage error naming the option where it is a folder or a journal; a file literally named
// "-" is never made.
TEST_F(Robustness, DashIsStandardOutputForStreamsAndRefusedForFolders) {
  copy("samples.csv");
  copy("models.json");
  auto split_run = [&](const std::string& args) {
    const CommandResult r = run_command("(cd " + dir.path().string() + " && " + arfit_bin() + " " + args + " > stdout.txt 2> stderr.txt)");
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.output << slurp(dir.file("stderr.txt"));
    EXPECT_FALSE(fs::exists(dir.file("-"))) << args;
    return std::make_pair(slurp(dir.file("stdout.txt")), slurp(dir.file("stderr.txt")));
  };
  auto [csv, summary] = split_run("ingest samples.csv -o -");
  EXPECT_EQ(csv.rfind("#arfit-samples v1\n", 0), 0u) << csv;
  EXPECT_EQ(arfit::parse_samples_csv(csv, "stdout").samples.size(), 34u);  // 17 sizes x 2 strategies
  EXPECT_NE(summary.find("summary: 1 files"), std::string::npos) << summary;
  auto [models_json, fit_report] = split_run("fit samples.csv -o -");
  EXPECT_EQ(nlohmann::json::parse(models_json).at("schema"), "arfit-models") << models_json.substr(0, 200);
  EXPECT_NE(fit_report.find("fitted "), std::string::npos) << fit_report;
  auto [table, codegen_report] = split_run("codegen models.json --format json -o -");
  EXPECT_TRUE(nlohmann::json::accept(table)) << table.substr(0, 200);
  EXPECT_NE(codegen_report.find("wrote -"), std::string::npos) << codegen_report;
  EXPECT_TRUE(nlohmann::json::accept(split_run("suggest models.json --json -").first));
  EXPECT_TRUE(nlohmann::json::accept(split_run("eval samples.csv --protocol interp2 --json -").first));
  fs::remove(dir.file("stdout.txt"));
  fs::remove(dir.file("stderr.txt"));
  // One stream holds one output.
  expect_refused("eval samples.csv --protocol interp2 --json - --points -", 2, {"--json and --points name the same file"});
  // Folders and journals.
  expect_refused("breakdown " + kProfile + " -o -", 2, {"--out: '-' is standard output, one stream, not a folder"});
  expect_refused("plot heatmap models.json -o -", 2, {"--out: '-' is standard output, one stream, not a folder"});
  // plot's --index page is staged with the figures: refused naming the option, before any fit or figure.
  expect_refused("plot fit samples.csv -o figs --index -", 2, {"--index: '-' (standard output): the page is staged"});
  EXPECT_FALSE(fs::exists(dir.file("figs")));
  try {
    arfit::bench::inspect_output("-", "{}", /*resume=*/true, /*overwrite=*/false);
    ADD_FAILURE() << "arbench -o - accepted";
  } catch (const arfit::bench::GridError& e) {
    EXPECT_EQ(e.option(), "-o/--output");
    EXPECT_NE(std::string(e.what()).find("journal"), std::string::npos) << e.what();
  }
  EXPECT_THROW(arfit::check_output_directory("-"), arfit::OutputPathError);
  EXPECT_THROW(arfit::move_into_place(dir.file("samples.csv"), "-"), arfit::OutputPathError);
  EXPECT_FALSE(fs::exists(dir.file("-")));
}

// Control characters quoted from input show as \xNN: a NUL ended the message (what() is a C string).
TEST_F(Robustness, MessagesShowControlCharactersQuotedFromInput) {
  const arfit::InputError e("f.csv", 3, "collective", std::string("unknown collective 'allre\0duce'", 31));
  EXPECT_EQ(std::string(e.what()), "f.csv:3: column 'collective': unknown collective 'allre\\x00duce'");
}

// A command with several outputs checks them all before writing any: --points in a missing folder used to
// fail after --json had replaced its file.
TEST_F(Robustness, EvalChecksEveryOutputBeforeWritingAny) {
  copy("samples.csv");
  dir.write("keep.json", "keep\n");
  expect_refused("eval samples.csv --protocol interp2 --json keep.json --points nodir/p.csv", 2, {"nodir/p.csv", "does not exist"});
  // An explicit method list is taken as given: crosshw has no `seed`, even where the list equals the
  // generic default.
  expect_refused("eval samples.csv --protocol crosshw:3 --methods auto,seed,alphabeta,loglog", 2, {"unknown method 'seed'"});
  // log-log needs two own sizes: at K < 2 it is refused, not scored 0.00 % over no points.
  expect_refused("eval samples.csv --protocol crosshw:1 --methods auto,loglog", 2, {"loglog needs crosshw:K with K >= 2"});
}

// The two folder rules (a command's output folder, the folder of an output file) end with the same checks and say
// the same things: a file where the folder should be, a folder no file can be created in.
TEST_F(Robustness, OutputFolderChecksShareTheirMessages) {
  auto refusal = [](const std::function<void()>& check) {
    try {
      check();
    } catch (const arfit::OutputPathError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const std::string file = dir.write("file.csv", "x\n");
  EXPECT_EQ(refusal([&] { arfit::check_output_directory(file); }),
            file + ": is a regular file, not a folder; name a folder for the outputs");
  EXPECT_EQ(refusal([&] { arfit::check_output_directory(file + "/sub"); }),
            file + "/sub: " + file + " is a regular file, not a folder; name a folder for the outputs");
  EXPECT_EQ(refusal([&] { arfit::check_output_folder(file + "/out.csv"); }),
            file + "/out.csv: " + file + " is a regular file, not a folder");
  EXPECT_EQ(refusal([&] { arfit::check_output_directory(dir.file("new/deeper")); }), "accepted");
  EXPECT_EQ(refusal([&] { arfit::check_output_folder(dir.file("out.csv")); }), "accepted");
  // A folder this user may not create files in: a read-only one (root may write there anyway), else /proc/self.
  std::string locked = dir.file("locked");
  fs::create_directory(locked);
  fs::permissions(locked, fs::perms::owner_read | fs::perms::owner_exec);
  if (::access(locked.c_str(), W_OK | X_OK) == 0) locked = "/proc/self";
  if (::access(locked.c_str(), W_OK | X_OK) == 0) GTEST_SKIP() << "every folder is writable for this user";
  const std::string reason = std::string(" (") + std::strerror(errno) + ")";
  EXPECT_EQ(refusal([&] { arfit::check_output_directory(locked); }), locked + ": cannot create files in the folder " + locked + reason);
  EXPECT_EQ(refusal([&] { arfit::check_output_folder(locked + "/out.csv"); }),
            locked + "/out.csv: cannot create files in the folder " + locked + reason);
  fs::permissions(dir.file("locked"), fs::perms::owner_all);
}

// An evaluation with nothing to evaluate, a table without rows, and rows a reader cannot read are said, not
// printed as zeros or dropped in silence.
TEST_F(Robustness, EmptyInputsAndDroppedRowsAreReported) {
  copy("samples.csv");
  expect_refused("eval samples.csv --protocol crossn", 1, {"no curve qualifies for --protocol crossn", ">= 3 GPU counts"});
  dir.write("header_only.csv", "#arfit-samples v1\ncollective,strategy,nranks,bytes,time_us\n");
  expect_refused("ingest header_only.csv -o out.csv", 1, {"header_only.csv: no data rows"});
  expect_refused("fit header_only.csv -o out.json", 1, {"header_only.csv: no data rows"});
  dir.write("header_only_allreduce.txt", nccl_tests_header());
  expect_refused("ingest header_only_allreduce.txt", 1, {"header_only_allreduce.txt: no data rows"});
  dir.write("trtllm.csv", "world_size,dtype,size,num_tokens,hidden_size,strategy,fusion,op,time (us)\n");
  expect_refused("ingest trtllm.csv", 1, {"trtllm.csv:1: no data rows"});

  // A row whose size is negative or beyond int64 is dropped, counted and named.
  std::string log = kNcclTestsLog;
  log.insert(log.find("        4096"), "          -8            -2     float     sum      -1     5.00    0.00    0.00      0     5.00    0.00    0.00      0\n");
  const std::string in = dir.write("dropped_allreduce.txt", log);
  const auto before = snapshot(dir.path());
  const CommandResult r = run_command(arfit_bin() + " ingest " + in);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("1 rows dropped"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(in + ":14: row dropped: size '-8'"), std::string::npos) << r.output;
  expect_unchanged(before, dir.path(), "ingest with a dropped row");
  const CommandResult f = run_command(arfit_bin() + " fit " + in + " -o " + dir.file("m.json") + " --min-points 2 -q");
  EXPECT_NE(f.output.find(in + ": 1 row(s) dropped"), std::string::npos) << f.output;

  // A sample without a message size (bytes 0, no tokens x hidden) has no place on a curve: fit, eval and plot
  // leave it out, and say so with its lines (a file of only such rows was "no group could be fitted (0 groups, see
  // above)" with nothing above).
  const std::string sizeless = dir.write("sizeless.csv",
      "#arfit-samples v1\ncollective,strategy,nranks,bytes,time_us\nallreduce,NCCL,8,0,5\nallreduce,NCCL,8,0,6\n");
  expect_refused("fit sizeless.csv -o m0.json", 1,
                 {"sizeless.csv: 2 sample(s) without a message size (bytes 0 and no tokens x hidden) are left out (line 3, line 4)",
                  "no group could be fitted: the inputs hold no successful sample with a message size"});
  std::string mixed = "#arfit-samples v1\ncollective,strategy,nranks,bytes,time_us\nallreduce,NCCL,8,0,5\n";
  for (int k = 10; k <= 16; ++k) mixed += "allreduce,NCCL,8," + std::to_string(1 << k) + "," + std::to_string(10 + k) + "\n";
  dir.write("mixed.csv", mixed);
  const CommandResult m = arfit_here("fit mixed.csv -o m1.json -q");
  EXPECT_EQ(m.exit_code, 0) << m.output;
  EXPECT_NE(m.output.find("mixed.csv: 1 sample(s) without a message size (bytes 0 and no tokens x hidden) are left out (line 3)"),
            std::string::npos) << m.output;
}

// `predict --bytes A:B:F` with more points than the cap is refused naming the option, not cut short.
TEST_F(Robustness, PredictPointCapIsAUsageError) {
  copy("models.json");
  expect_refused("predict models.json --collective allreduce --nranks 8 --bytes 1:1e18:1.0000001", 2, {"--bytes", "100000 points"});
  const CommandResult ok = run_command(arfit_bin() + " predict " + dir.file("models.json") + " --collective allreduce --nranks 8 --bytes 1K:1M:2 --json");
  ASSERT_EQ(ok.exit_code, 0) << ok.output;
  EXPECT_EQ(nlohmann::json::parse(ok.output).size(), 11u);
}

// ---------------------------------------------------------------- exit codes and messages

// Bad option values are usage errors (exit 2) whose message names the option.
TEST_F(Robustness, BadOptionValuesAreUsageErrorsNamingTheOption) {
  copy("models.json");
  fs::copy_file(kProfile, dir.file("profile.json"));
  const std::string predict = "predict models.json --collective allreduce ";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {predict + "--bytes 1M --nranks 0", "--nranks"},
      {predict + "--bytes 1M --nranks -2", "--nranks"},
      {predict + "--bytes 1M --nnodes 0", "--nnodes"},
      {predict + "--bytes 1M --sm 0", "--sm"},
      {predict + "--bytes 1M --sm 999", "--sm"},
      {predict + "--bytes 1K:1M:abc", "--bytes"},
      {predict + "--bytes 1e-3:1:2 --nranks 8", "--bytes: size '1e-3' must be at least 1"},  // ten rows of '0' bytes
      // A fraction of a count named int64's range, which starts below 0 (counts are at least 1).
      {predict + "--tokens 1.5 --hidden 4096 --nranks 8", "--tokens: '1.5' is not a whole number (a count, at least 1)"},
      {"whatif profile.json --models models.json --tp 8 --tokens 0", "--tokens"},
      {"whatif profile.json --models models.json --tp 8 --tokens -5", "--tokens"},
      {"whatif profile.json --models models.json --tp 0", "--tp"},
      {"breakdown profile.json -o out --top -1", "--top"},
      {"ingest models.json --nranks 0", "--nranks"},
      {predict + "--nranks 8 --bytes 1,,2", "--bytes"},
      {predict + "--nranks 8 --bytes 1K:1M:", "--bytes"},
      {predict + "--nranks 8 --bytes ' 8'", "--bytes"},
      {predict + "--nranks 8 --tokens 9223372036854775807 --hidden 8", "--tokens"},
      {"whatif profile.json --models models.json --tp 8 --nnodes 16", "--nnodes"},
      // Both counts given to ingest: was exit 1 naming the file's first row, as if the file were wrong.
      {"ingest models.json --nranks 8 --nnodes 16", "--nnodes 16 is more nodes than --nranks 8 has GPUs"},
      {"breakdown profile.json -o profile.json", "profile.json: is a regular file, not a folder"},
      {predict + "--nranks 2 --splits 100-200", "--splits is an all-to-allv split"},
      {"predict models.json --collective alltoallv --nranks 8 --splits 100-200", "--splits '100-200' has 2 ranks, --nranks 8"},
      {"predict models.json --collective alltoallv --nranks 2 --splits 0-0", "--splits '0-0' sends nothing"},
      {"breakdown profile.json -o /dev/null", "/dev/null: is a character device, not a folder"},
      // Integers as written: CLI11 read 016 as octal 14 (an answer for 14 GPUs, exit 0), 0x8, +8 and ' 8' as 8.
      {predict + "--bytes 1M --nranks 016", "--nranks: '016' has a leading zero, read as octal by C's rules; write 16"},
      {predict + "--bytes 1M --nranks 0x8", "--nranks: '0x8' is not a decimal integer"},
      {predict + "--bytes 1M --nranks +8", "--nranks: '+8' is not a decimal integer"},
      {predict + "--bytes 1M --nranks ' 8'", "--nranks: ' 8' is not a decimal integer"},
      {"breakdown profile.json -o out --top 010", "--top: '010' has a leading zero"},
      // Not valid octal: CLI11's range check converted it first and said "Value 08 not in range".
      {predict + "--bytes 1M --nranks 08", "--nranks: '08' has a leading zero, read as octal by C's rules; write 8"},
  };
  for (const auto& [args, option] : cases) {
    const CommandResult r = expect_refused(args, 2, {option});
    EXPECT_EQ(r.output.find("stod"), std::string::npos) << r.output;
  }
  // arbench's integers likewise (--iters 016 ran 14 iterations), the option named once ("option --iters:
  // --iters: ..." before); a byte size that is not a whole number of elements (3 bytes of bf16 was measured as 2).
  for (const auto& [option, value, says] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"--iters", "016", "'016' has a leading zero"}, {"--iters", "09", "'09' has a leading zero"},
           {"--bytes", "3", "measured as 2 bytes"},
           // Inside compound values the same integer rule, and no empty item (issue 43: lattice:02 ran, '' ran the
           // default split, 'cyclic,,even' dropped the empty item).
           {"--plan", "lattice:02", "'02' has a leading zero"}, {"--plan", "anchors:03", "'03' has a leading zero"},
           {"--splits", "dlrm:064:4:8:1", "batch '064' has a leading zero"}, {"--splits", "", "is empty"},
           {"--splits", "cyclic,,even", "item 2 of 'cyclic,,even' is empty"}, {"--dtype", "fp16,", "is empty"}}) {
    const char* argv[] = {"arbench", "--backend", "host", option.c_str(), value.c_str(), "-o", "x.csv"};
    try {
      arfit::bench::parse_options(7, argv);
      ADD_FAILURE() << option << " " << value << " accepted";
    } catch (const arfit::bench::GridError& e) {
      EXPECT_EQ(e.option(), option);
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find(option + ": " + option), std::string::npos) << e.what();
    }
  }
}

// A UTF-8 byte-order mark is skipped and CR-only line ends are read, by every text reader: the result is the
// same as for the plain file.
TEST_F(Robustness, ByteOrderMarkAndCarriageReturnsAreRead) {
  const std::string bom = "\xEF\xBB\xBF";
  auto cr_only = [](std::string s) {
    for (char& c : s)
      if (c == '\n') c = '\r';
    return s;
  };
  auto summary = [](const std::string& output) { return output.substr(output.find("summary:")); };
  const std::vector<std::pair<std::string, std::string>> inputs = {
      {"samples.csv", synthetic_samples()},
      {"nccl_allreduce.txt", kNcclTestsLog},
      {"aic_h100_nccl_perf.csv", "framework,version,device,op_name,kernel_source,nccl_dtype,num_gpus,message_size,latency\n"
                                 "trtllm,1.0,H100,all_reduce,NCCL,half,8,1024,0.01\n"
                                 "trtllm,1.0,H100,all_reduce,NCCL,half,8,2048,0.012\n"},
  };
  for (const auto& [name, text] : inputs) {
    const CommandResult plain = run_command(arfit_bin() + " ingest -q " + dir.write(name, text));
    ASSERT_EQ(plain.exit_code, 0) << name << "\n" << plain.output;
    for (const auto& variant : {bom + text, cr_only(text), bom + cr_only(text)}) {
      const std::string in = dir.write(name, variant);
      const auto before = snapshot(dir.path());
      const CommandResult r = run_command(arfit_bin() + " ingest -q " + in);
      EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.output;
      if (r.exit_code == 0) {
        EXPECT_EQ(summary(r.output), summary(plain.output)) << name;
      }
      expect_unchanged(before, dir.path(), "ingest " + name);
    }
  }
  // Profiles: vLLM JSON and nsys CSV, through breakdown.
  for (const auto& [name, source] : {std::pair<std::string, std::string>{"profile.json", kProfile}, {"kern_sum.csv", kNsysKernSum}}) {
    const std::string text = slurp(source);
    const CommandResult plain = run_command(arfit_bin() + " breakdown --no-figures " + dir.write(name, text) + " -o " + dir.file("plain"));
    ASSERT_EQ(plain.exit_code, 0) << plain.output;
    for (const auto& variant : {bom + text, cr_only(text)}) {
      const CommandResult r =
          run_command(arfit_bin() + " breakdown --no-figures " + dir.write(name, variant) + " -o " + dir.file("variant"));
      EXPECT_EQ(r.exit_code, 0) << name << "\n" << r.output;
      EXPECT_EQ(slurp(dir.file("variant/breakdown_classes.csv")), slurp(dir.file("plain/breakdown_classes.csv"))) << name;
    }
  }
  // A long line a reader quotes in its message is not echoed whole.
  dir.write("garbage.csv", "#arfit-samples v2" + std::string(5000, 'x') + "\n");
  const CommandResult g = expect_refused("ingest garbage.csv", 1, {"garbage.csv:1: unsupported schema", "characters cut"});
  EXPECT_LT(g.output.size(), 1000u) << g.output.size();
}

// JSON errors name the file, the line and the key path, without nlohmann's "[json.exception...]" prefix.
TEST_F(Robustness, JsonErrorsNameFileLineAndKeyPath) {
  dir.write("syntax.json", "{\"schema\": \"arfit-models\",\n \"groups\": [1, 2,\n  \"x\": 3]}\n");
  const CommandResult s = expect_refused("predict syntax.json --collective allreduce --bytes 1M", 1,
                                         {"syntax.json:3: invalid JSON at column 6: syntax error"});
  EXPECT_EQ(s.output.find("[json.exception"), std::string::npos) << s.output;
  EXPECT_EQ(s.output.find("parse error at"), std::string::npos) << s.output;
  nlohmann::json m = models();
  m["groups"][1]["key"].erase("strategy");
  write_models("missing.json", m);
  const CommandResult k = expect_refused("predict missing.json --collective allreduce --bytes 1M", 1,
                                         {"/groups/1/key: missing key 'strategy'"});
  EXPECT_TRUE(names_file_line(k.output, "missing.json")) << k.output;
  dir.write("spec.json", "{\"tp\": [2,\n 4,]}");
  const char* argv[] = {"arbench", "--spec", "spec.json", "-o", "x.csv"};
  const std::string cwd = fs::current_path();
  fs::current_path(dir.path());
  try {
    arfit::bench::parse_options(5, argv);
    ADD_FAILURE() << "bad spec accepted";
  } catch (const arfit::bench::GridError& e) {
    EXPECT_NE(std::string(e.what()).find("spec.json:2: invalid JSON at column"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("[json.exception"), std::string::npos) << e.what();
  }
  fs::current_path(cwd);
}

// `fit -q` hides the per-group lines, so its failure says the reasons itself instead of "see above".
TEST_F(Robustness, QuietFitSaysWhy) {
  dir.write("few.csv", "#arfit-samples v1\ncollective,strategy,nranks,bytes,time_us\nallreduce,NCCL,8,1024,10\n");
  const CommandResult r = expect_refused("fit few.csv -o m.json -q", 1, {"too few distinct sizes"});
  EXPECT_EQ(r.output.find("see above"), std::string::npos) << r.output;
}

// A write that fails (here: the file size limit, as a full disk would) says the system's reason and leaves
// neither the output nor its temporary file.
TEST_F(Robustness, WriteFailuresSayTheSystemsReason) {
  copy("samples.csv");
  // SIGXFSZ ignored: the write returns EFBIG instead of killing the process.
  const std::string cmd = "cd " + dir.path().string() + " && sh -c \"trap '' XFSZ; ulimit -f 1; exec " + arfit_bin() +
                          " ingest samples.csv -o big.csv -q\"";
  const auto before = snapshot(dir.path());
  const CommandResult r = run_command(cmd);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("big.csv: cannot write: File too large"), std::string::npos) << r.output;
  expect_unchanged(before, dir.path(), "ingest over the file size limit");
}

// With "-o -" the report goes to standard error: a report that cannot be written there (2>/dev/full) fails
// nothing and says nothing of standard output, which was written whole; with standard error closed (2>&-) the
// report is dropped, never mixed into the data; the data's own descriptor on a full disk still fails (1).
TEST_F(Robustness, DashOutputStatusFollowsTheDataNotTheReport) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  copy("samples.csv");
  const std::string in_dir = "cd " + dir.path().string() + " && ";
  CommandResult r = run_command(in_dir + "( " + arfit_bin() + " fit samples.csv -o - > models.json 2>/dev/full )");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(slurp(dir.file("models.json"))).at("schema"), "arfit-models");
  r = run_command(in_dir + "( " + arfit_bin() + " ingest samples.csv -o - > copy.csv 2>&- )");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const std::string csv = slurp(dir.file("copy.csv"));
  EXPECT_EQ(csv.find("summary:"), std::string::npos) << csv;
  EXPECT_EQ(csv.find("wrote "), std::string::npos) << csv;
  EXPECT_EQ(arfit::parse_samples_csv(csv, "copy.csv").samples.size(), 34u);
  r = run_command(in_dir + "( " + arfit_bin() + " fit samples.csv -o - 2>&1 >/dev/full )");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("-: cannot write standard output: No space left on device"), std::string::npos) << r.output;
}

// `arfit bogus` names the unknown subcommand and lists the known ones.
TEST_F(Robustness, UnknownSubcommandListsTheKnownOnes) {
  const CommandResult r = expect_refused("bogus", 2, {"unknown subcommand 'bogus'", "fit", "predict", "codegen", "whatif"});
  EXPECT_EQ(r.output.find("A subcommand is required"), std::string::npos) << r.output;
  // The parser's own refusals say so as arfit's do (they printed bare: "samples is required").
  copy("models.json");
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"eval", "samples is required"},
           {"predict missing.json --collective allreduce", "models: missing.json: no such file"},
           {"predict models.json --collective allreduce --bogus", "The following argument was not expected: --bogus"}}) {
    const CommandResult c = expect_refused(args, 2, {says});
    EXPECT_EQ(c.output.rfind("arfit: usage error: " + says, 0), 0u) << c.output;
  }
}

// A command's answer on standard output (predict's table or --json, ingest's summary, --help) written to a
// full disk used to end in success with the answer cut short or missing; now it is a failed run (1) with the
// system's reason.
TEST_F(Robustness, StandardOutputThatCannotBeWrittenFails) {
  if (!fs::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  const std::string models = copy("models.json");
  copy("samples.csv");
  // The subshell sends arfit's stderr to the captured output and its stdout to the full device.
  const auto to_full = [&](const std::string& args) {
    return run_command("cd " + dir.path().string() + " && ( " + arfit_bin() + " " + args + " 2>&1 >/dev/full )");
  };
  for (const std::string args : {"predict models.json --collective allreduce --strategy NCCL --nranks 8 --bytes 1K:64M --json",
                                 "predict models.json --collective allreduce --strategy NCCL --nranks 8 --bytes 4096",
                                 "ingest samples.csv", "version", "--help"}) {
    const auto before = snapshot(dir.path());
    const CommandResult r = to_full(args);
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.output;
    EXPECT_NE(r.output.find("arfit: error: writing standard output failed"), std::string::npos) << args << "\n" << r.output;
    expect_unchanged(before, dir.path(), args);
  }
  // A usage error keeps its status (2); the same commands to a working stdout succeed.
  EXPECT_EQ(to_full("predict models.json --bytes 4096").exit_code, 2);
  EXPECT_EQ(run_command("cd " + dir.path().string() + " && " + arfit_bin() + " ingest samples.csv >/dev/null").exit_code, 0);
}

// Two equal keys in one JSON object: nlohmann keeps the last, so a hand-edited models file with a second
// "sigma_in" (or a profile with a second "cuda_time_us", an arbench spec with a second "bytes") was read as
// the last one, silently. Every JSON input goes through parse_json, which now names the file, the line of the
// repeated key and the key. Equal keys in different objects, and keys spelled with escapes, are told apart.
TEST_F(Robustness, JsonKeysGivenTwiceInOneObjectAreErrors) {
  const std::string text = models().dump(1);
  const std::size_t sigma = text.find("\"sigma_in\"");
  ASSERT_NE(sigma, std::string::npos);
  std::string twice = text;
  twice.insert(sigma, "\"sigma_in\": 9.0,\n");
  // The error names the second "sigma_in": the original one, now a line below the inserted one.
  const long line = static_cast<long>(std::count(twice.begin(), twice.begin() + static_cast<long>(sigma), '\n')) + 2;
  dir.write("twice.json", twice);
  expect_refused("predict twice.json --collective allreduce --strategy NCCL --bytes 1M --nranks 8", 1,
                 {"twice.json:" + std::to_string(line) + ": key 'sigma_in' appears twice in one object"});
  // The second spelling of a key with an escape is the same key.
  dir.write("escaped.json", R"({"context": {}, "prefill": {"summary_stats": [{"entry": {"name": "k", "cuda_time_us": 1,
    "cuda_time_\u0075s": 900}}]}})");
  expect_refused("breakdown escaped.json -o out --no-figures", 1, {"escaped.json:2: key 'cuda_time_us' appears twice"});
  dir.write("twice_nccl.json", "{\"results\": [], \"results\": [{\"size\": 8}]}");
  expect_refused("ingest twice_nccl.json --format nccl-tests-json", 1, {"twice_nccl.json:1: key 'results' appears twice"});
  // Equal keys in sibling and nested objects are fine.
  const std::string ok = arfit::testing::run_command("cd " + dir.path().string() + " && " + arfit_bin() + " breakdown " +
                                                       kProfile + " -o out_ok --no-figures").output;
  EXPECT_TRUE(fs::exists(dir.file("out_ok/breakdown_classes.csv"))) << ok;
}

namespace {

// synthetic_samples() labelled as the machine `system` (a `system` column), so that files of two machines can be
// fitted into one models file or lent as another machine's curves.
std::string synthetic_samples_of(const std::string& system) {
  std::string out;
  std::size_t line = 0;
  for (std::size_t start = 0, end; start < synthetic_samples().size(); start = end + 1) {
    const std::string& s = synthetic_samples();
    end = s.find('\n', start);
    std::string row = s.substr(start, end - start);
    if (line == 1) row += ",system";
    else if (line > 1) row += "," + system;
    out += row + "\n";
    ++line;
  }
  return out;
}

}  // namespace

// --system, --dtype and --strategy name what a models file is asked about. A machine the file does not
// hold, one of several left unnamed, a type of no known size and an all-reduce strategy the file has no model of
// were answered as a query without an answer (predict: exit 1, "no model answers"), or not at all (whatif --strategy
// kept every all-reduce as measured and exited 0; whatif on a file of two machines did the same without --system).
// They are the user's to correct: exit 2 naming the option and listing what the file holds, as codegen and suggest
// already said.
TEST_F(Robustness, OptionsNamingNothingInTheModelsFileAreUsageErrors) {
  copy("models.json");
  fs::copy_file(kProfile, dir.file("profile.json"));
  dir.write("m1.csv", synthetic_samples_of("m1"));
  dir.write("m2.csv", synthetic_samples_of("m2"));
  const CommandResult fit = arfit_here("fit m1.csv m2.csv -o two.json -q");
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  const std::string predict = "predict models.json --collective allreduce --nranks 8 --bytes 1M ";
  const std::string whatif = "whatif profile.json --tp 8 --hidden 4096 ";
  expect_refused(predict + "--system nosuch", 2, {"--system: 'nosuch' is not in the models file (systems: default)"});
  expect_refused(predict + "--dtype bogus", 2, {"--dtype: 'bogus' is neither a known element type", "nor a dtype of models.json"});
  // predict's --strategy too (it answered "no model answers this query", exit 1, as for a query beyond the models).
  expect_refused(predict + "--strategy ONESHOTT", 2,
                 {"--strategy: 'ONESHOTT' is not a strategy of models.json for allreduce (strategies: NCCL, ONESHOT)"});
  expect_refused("predict two.json --collective allreduce --nranks 8 --bytes 1M", 2,
                 {"the models file holds 2 systems; choose one with --system (systems: m1, m2)"});
  expect_refused(whatif + "--models models.json --strategy ONESHOTT", 2,
                 {"--strategy: 'ONESHOTT' is not an all-reduce strategy of models.json (strategies: NCCL, ONESHOT)"});
  expect_refused(whatif + "--models two.json", 2, {"the models file holds 2 systems; choose one with --system"});
  expect_refused(whatif + "--models two.json --system m3", 2, {"--system: 'm3' is not in the models file (systems: m1, m2)"});
  // What the file holds is answered, and a known type it has no model of is still a query without an answer.
  EXPECT_EQ(arfit_here("predict two.json --collective allreduce --nranks 8 --bytes 1M --system m2").exit_code, 0);
  EXPECT_EQ(arfit_here(whatif + "--models two.json --system m1 --strategy ONESHOT").exit_code, 0);
  expect_refused(predict + "--dtype fp64", 1, {"no model in models.json answers the query"});
}

// A --prior is another machine, counted once among the curves a transfer borrows from (fit) or the scale-out steps
// a query may borrow (predict). The same models file given twice, by the same or another name, or next to the
// sample file it was fitted from (its `inputs` record that file's fingerprint), or a copy of it, weighed that machine
// twice: `fit --prior m2.json --prior m2.json` wrote another models file than `--prior m2.json`, with exit 0.
TEST_F(Robustness, EachPriorMachineCountsOnce) {
  dir.write("m1.csv", synthetic_samples_of("m1"));
  dir.write("m2.csv", synthetic_samples_of("m2"));
  const CommandResult fit = arfit_here("fit m2.csv -o m2.json -q");
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  fs::copy_file(dir.file("m2.json"), dir.file("copy.json"));
  fs::create_hard_link(dir.file("m2.json"), dir.file("linked.json"));
  const std::string fit_m1 = "fit m1.csv -o out.json -q ";
  expect_refused(fit_m1 + "--prior m2.json --prior m2.json", 2, {"--prior m2.json is given twice; give each machine once"});
  expect_refused(fit_m1 + "--prior m2.json --prior ./m2.json", 2, {"--prior ./m2.json is given twice (the same file as m2.json)"});
  expect_refused(fit_m1 + "--prior m2.json --prior linked.json", 2, {"--prior linked.json is given twice (the same file as m2.json)"});
  expect_refused(fit_m1 + "--prior m2.json --prior m2.csv", 2,
                 {"--prior m2.csv holds the measurements of m2.csv, as --prior m2.json does; give each machine once"});
  expect_refused(fit_m1 + "--prior m2.json --prior copy.json", 2, {"--prior copy.json holds the measurements of m2.csv"});
  expect_refused("predict m2.json --collective allreduce --strategy NCCL --nranks 8 --nnodes 2 --bytes 1M --prior m2.csv --prior m2.csv",
                 2, {"--prior m2.csv is given twice"});
  // Each machine once is a prior as before.
  const CommandResult once = arfit_here(fit_m1 + "--prior m2.json");
  EXPECT_EQ(once.exit_code, 0) << once.output;
}

// A prior holding the measurements a predict's models file was fitted from is the machine lending itself: a renamed
// byte-identical copy of its input moved the 1 GiB answer by +41 % with exit 0 (fit --prior refused the same case).
// So is a models file fitted from such a copy, and a prior fitted from the target's own sizes under its machine label
// (its intervals then covered 62 %): each group records its measured points, and one shared point of a group with
// the target's id is the machine's own measurement.
TEST_F(Robustness, PriorsHoldingTheTargetsOwnMeasurementsAreRefused) {
  dir.write("m1.csv", synthetic_samples_of("m1"));
  dir.write("m2.csv", synthetic_samples_of("m2"));
  dir.write("renamed.csv", synthetic_samples_of("m1"));
  // The target's rows without its last three: another file, another fingerprint, the same machine and sizes.
  std::string part = synthetic_samples_of("m1");
  for (int cut = 0; cut < 3; ++cut) part.erase(part.rfind('\n', part.size() - 2) + 1);
  dir.write("own_part.csv", part);
  for (const char* name : {"m1", "m2", "renamed", "own_part"}) {
    const CommandResult r = arfit_here(std::string("fit ") + name + ".csv -o " + name + ".json -q");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const std::string predict = "predict m1.json --collective allreduce --strategy NCCL --nranks 8 --nnodes 2 --bytes 1M ";
  expect_refused(predict + "--prior renamed.csv", 2,
                 {"--prior renamed.csv is the same file as m1.csv, an input of m1.json; a prior is another machine's file"});
  expect_refused(predict + "--prior renamed.json", 2,
                 {"--prior renamed.json was fitted from renamed.csv, the same file as m1.csv, an input of m1.json"});
  expect_refused(predict + "--prior m1.json", 2, {"--prior m1.json is also the models file"});
  expect_refused(predict + "--prior own_part.json", 2, {"--prior own_part.json holds", "of m1/allreduce/NCCL", "under the same machine label"});
  expect_refused(predict + "--prior own_part.csv", 2, {"--prior own_part.csv holds", "under the same machine label"});
  expect_refused("fit m1.csv -o out.json -q --prior renamed.csv", 2, {"--prior renamed.csv is the same file as m1.csv, an input of this fit"});
  expect_refused("fit m1.csv -o out.json -q --prior own_part.json", 2, {"--prior own_part.json holds", "that this fit holds"});
  // Another machine's file still lends.
  const CommandResult other = arfit_here(predict + "--prior m2.json");
  EXPECT_EQ(other.exit_code, 0) << other.output;
}

namespace {

// A one-node nccl-tests all-reduce log of 2 ranks, with per-rank device lines naming `device` (none when empty).
std::string two_rank_log(const std::string& device) {
  std::string out = "# Collective test starting: all_reduce_perf\n";
  if (!device.empty())
    out += "# Using devices\n#  Rank  0 Group  0 Pid 1 on h device  0 [0x01] " + device + "\n#  Rank  1 Group  0 Pid 1 on h device  1 [0x02] " +
           device + "\n";
  out += "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
  for (double bytes = 1024; bytes <= 64.0 * 1024 * 1024; bytes *= 2) {
    const double t = 8 + bytes / 20000, t2 = t * 1.02;
    char row[256];
    std::snprintf(row, sizeof row, "%13.0f %13.0f float sum -1 %8.2f %7.2f %7.2f 0 %8.2f %7.2f %7.2f 0\n", bytes, bytes / 4, t,
                  bytes / t / 1e3, bytes / t / 1e3, t2, bytes / t2 / 1e3, bytes / t2 / 1e3);
    out += row;
  }
  return out;
}

}  // namespace

// A machine is what its file says, never its name alone: the SM of a log was read from its file name when the file
// stated no device, so the same bytes under another name answered 9414 us instead of 4717 us across nodes. Where the
// file states its device, two names answer alike; where only the name tells, predict and fit say so.
TEST_F(Robustness, MachineIdentityIsWhatTheFileSays) {
  const std::string stated = two_rank_log("NVIDIA H100 80GB HBM3"), unstated = two_rank_log("");
  dir.write("a100box_allreduce.txt", stated);
  dir.write("plain_allreduce.txt", stated);
  dir.write("a100bare_allreduce.txt", unstated);
  for (const char* name : {"a100box", "plain", "a100bare"}) {
    const CommandResult r = arfit_here(std::string("fit ") + name + "_allreduce.txt -o " + name + ".json");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    EXPECT_EQ(r.output.find("taken from the file name " + std::string(name) + "_allreduce.txt; the file does not say its GPU") !=
                  std::string::npos,
              std::string(name) == "a100bare")
        << r.output;
  }
  // The JSON alone in a file (the notes go to standard error, which run_command joins to standard output).
  auto predict_json = [&](const std::string& models, const std::string& out) {
    return run_command("cd " + dir.path().string() + " && { " + arfit_bin() + " predict " + models +
                       " --collective allreduce --nranks 4 --nnodes 2 --bytes 1M,1G --json > " + out + "; }");
  };
  const CommandResult named = predict_json("a100box.json", "a.out"), plain = predict_json("plain.json", "b.out");
  ASSERT_EQ(named.exit_code, 0) << named.output;
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  const auto a = nlohmann::json::parse(slurp(dir.file("a.out"))), b = nlohmann::json::parse(slurp(dir.file("b.out")));
  ASSERT_EQ(a.size(), 2u);
  for (std::size_t i = 0; i < a.size(); ++i)
    for (const char* field : {"time_us", "lo_us", "hi_us"}) EXPECT_EQ(a[i].at(field), b[i].at(field)) << field << " at row " << i;
  const CommandResult bare = arfit_here("predict a100bare.json --collective allreduce --nranks 4 --nnodes 2 --bytes 1M 2>&1");
  ASSERT_EQ(bare.exit_code, 0) << bare.output;
  EXPECT_NE(bare.output.find("(machine 'a100bare_allreduce' taken from the file name a100bare_allreduce.txt: SM 80)"), std::string::npos)
      << bare.output;
  EXPECT_NE(bare.output.find("note: machine 'a100bare_allreduce' taken from the file name a100bare_allreduce.txt; the file does not say"),
            std::string::npos)
      << bare.output;
  // A label the user states (--system, kept in the sample CSV's system column) is not a file's name: the SM is still
  // read from a label, and said so, but not as the file name's.
  ASSERT_EQ(arfit_here("ingest a100bare_allreduce.txt --system a100_node -o named.csv -q").exit_code, 0);
  const CommandResult stated_label = arfit_here("fit named.csv -o named.json");
  ASSERT_EQ(stated_label.exit_code, 0) << stated_label.output;
  EXPECT_NE(stated_label.output.find("machine 'a100_node': SM 80 is read from its label; no file says its GPU"), std::string::npos)
      << stated_label.output;
  EXPECT_EQ(stated_label.output.find("taken from the file name"), std::string::npos) << stated_label.output;
}

namespace {

// An nccl-tests all-reduce log of one run per entry of `runs` (hosts, ranks per host): per-rank lines on hosts
// n0, n1, ... naming `device` (none when empty), times `alpha_us` + bytes / `bytes_per_us` growing with the nodes.
std::string cluster_log(const std::string& device, const std::vector<std::pair<int, int>>& runs, double alpha_us, double bytes_per_us) {
  std::string out;
  for (const auto& [hosts, per_host] : runs) {
    out += "# Collective test starting: all_reduce_perf\n# Using devices\n";
    for (int r = 0; r < hosts * per_host; ++r)
      out += "#  Rank " + std::to_string(r) + " Group  0 Pid 1 on n" + std::to_string(r / per_host) + " device " +
             std::to_string(r % per_host) + " [0x0" + std::to_string(r % per_host) + "] " + device + "\n";
    out += "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong\n";
    for (double bytes = 1024; bytes <= 1024.0 * 1024 * 1024; bytes *= 2) {
      const int n = hosts * per_host;
      const double t = alpha_us * hosts + bytes / bytes_per_us * (hosts == 1 ? 1 : 2.5), t2 = t * 1.02, bus = 2.0 * (n - 1) / n;
      char row[256];
      std::snprintf(row, sizeof row, "%13.0f %13.0f float sum -1 %10.2f %7.2f %7.2f 0 %10.2f %7.2f %7.2f 0\n", bytes, bytes / 4, t,
                    bytes / t / 1e3, bus * bytes / t / 1e3, t2, bytes / t2 / 1e3, bus * bytes / t2 / 1e3);
      out += row;
    }
  }
  return out;
}

}  // namespace

// The scale-out step a prior lends is its measurements', not its name's: the same bytes of a cluster's log under two
// names lend the same step to `predict --nnodes --prior` (the GPU type was read from a log's name, and the same bytes
// under another name answered 9414 us instead of 4717 us). Where the log does not say its GPU, the name is still read,
// and `how` and a note say so.
TEST_F(Robustness, APriorLendsTheSameStepUnderAnyName) {
  const std::string h100 = "NVIDIA H100 80GB HBM3";
  dir.write("target.txt", cluster_log(h100, {{1, 2}}, 8, 20000));
  ASSERT_EQ(arfit_here("fit target.txt -o target.json -q").exit_code, 0);
  const std::string cluster = cluster_log(h100, {{1, 2}, {2, 2}}, 9, 18000), bare = cluster_log("", {{1, 2}, {2, 2}}, 9, 18000);
  dir.write("cluster.txt", cluster);
  dir.write("a100_run7.txt", cluster);  // a name that says another GPU than the file does
  dir.write("h100_bare.txt", bare);
  dir.write("bare.txt", bare);
  auto predict_with = [&](const std::string& prior, const std::string& out) {
    const CommandResult r = run_command("cd " + dir.path().string() + " && { " + arfit_bin() +
                                        " predict target.json --collective allreduce --nranks 4 --nnodes 2 --bytes 1M,1G --json --prior " +
                                        prior + " > " + out + "; }");
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return std::make_pair(nlohmann::json::parse(slurp(dir.file(out))), r.output);
  };
  const auto [stated, stated_notes] = predict_with("cluster.txt", "a.out");
  const auto [renamed, renamed_notes] = predict_with("a100_run7.txt", "b.out");
  ASSERT_EQ(stated.size(), 2u);
  for (std::size_t i = 0; i < stated.size(); ++i) {
    EXPECT_NE(stated[i].at("how").get<std::string>().find("scale-out prior from 1 machine(s): cluster"), std::string::npos) << stated[i];
    for (const char* field : {"time_us", "lo_us", "hi_us"}) EXPECT_EQ(stated[i].at(field), renamed[i].at(field)) << field << " at row " << i;
  }
  EXPECT_EQ(renamed_notes.find("taken from the file name"), std::string::npos) << renamed_notes;
  // The log states no device: its name is all there is, read and said.
  const auto [named, named_notes] = predict_with("h100_bare.txt", "c.out");
  EXPECT_NE(named[0].at("how").get<std::string>().find("(machine 'h100_bare' taken from the file name h100_bare.txt: SM 90)"),
            std::string::npos)
      << named[0];
  EXPECT_NE(named_notes.find("note: machine 'h100_bare' taken from the file name h100_bare.txt; the file does not say its GPU"),
            std::string::npos)
      << named_notes;
  const auto [unnamed, unnamed_notes] = predict_with("bare.txt", "d.out");
  EXPECT_EQ(unnamed[0].at("how").get<std::string>().find("taken from the file name"), std::string::npos) << unnamed[0];
}

// An option the chosen codegen format or eval protocol does not read was ignored: `codegen --format vllm --nnodes 2`
// wrote the one-node thresholds, `--format json --bytes ...` the grid as without it, `eval --protocol interp2 --plan
// lattice:2` the interp2 table, each with exit 0, so the user believed they had asked for something they had not.
// An empty name in --methods ("auto,,seed", ",") was dropped, leaving fewer methods or an empty table.
TEST_F(Robustness, OptionsTheFormatOrProtocolDoesNotReadAreRefused) {
  copy("models.json");
  copy("samples.csv");
  const std::string codegen = "codegen models.json -o out.txt --format ";
  expect_refused(codegen + "vllm --nnodes 2", 2, {"--nnodes: only the nccl-tuner format writes it; the vllm format"});
  expect_refused(codegen + "sglang --channels 4", 2, {"--channels: only the nccl-tuner format writes it; the sglang format"});
  expect_refused(codegen + "header --nnodes 2", 2, {"--nnodes: only the nccl-tuner format writes it; the header format"});
  expect_refused(codegen + "json --bytes 1024:1048576", 2, {"--bytes: the json format works on the --tokens x --hidden grid"});
  expect_refused(codegen + "header --bytes 1024:1048576", 2, {"--bytes: the header format works on the --tokens x --hidden grid"});
  expect_refused(codegen + "trtllm --bytes 1024:1048576", 2, {"--bytes: the trtllm format works on the --tokens x --hidden grid"});
  expect_refused("eval samples.csv --protocol interp2 --plan lattice:2", 2, {"--plan is the measured subset of --protocol select"});
  expect_refused("eval samples.csv --protocol interp2 --methods auto,,seed", 2, {"--methods: empty method name in 'auto,,seed'"});
  expect_refused("eval samples.csv --protocol interp2 --methods ,", 2, {"--methods: empty method name in ','"});
  // The defaults, spelled out, are what the formats read anyway.
  const CommandResult json = arfit_here(codegen +
                                         "json --bytes 8:4294967296 --nnodes 1 --channels 0");
  EXPECT_EQ(json.exit_code, 0) << json.output;
}

// eval checked --protocol's argument and --methods only after reading every sample file: minutes of reading
// before a typo's usage error, and an unreadable input hid the typo (exit 1 naming the file). Now the usage error
// comes first; and crosshw's K is read as decimal digits only (std::stoi read "crosshw: 2" and "crosshw:+2" as 2).
TEST_F(Robustness, EvalRefusesItsOptionsBeforeReadingAnyInput) {
  copy("samples.csv");
  dir.write("unreadable.txt", "no format arfit reads\n");
  const std::string eval = "eval unreadable.txt samples.csv ";
  expect_refused(eval + "--protocol crosshw:x", 2, {"--protocol crosshw:K needs K", "'x' is not a whole number"});
  expect_refused(eval + "--protocol 'crosshw: 2'", 2, {"--protocol crosshw:K needs K", "' 2' is not a whole number"});
  expect_refused(eval + "--protocol crosshw:+2", 2, {"--protocol crosshw:K needs K", "'+2' is not a whole number"});
  expect_refused(eval + "--protocol crosshw", 2, {"--protocol crosshw:K needs K", "no number given"});
  expect_refused(eval + "--protocol crosshw:1 --methods loglog", 2, {"--methods: method loglog needs crosshw:K with K >= 2"});
  expect_refused(eval + "--protocol crosshw:3 --methods seed", 2, {"--methods: unknown method 'seed' for crosshw"});
  expect_refused(eval + "--protocol interp2 --methods bogus", 2, {"--methods: unknown method 'bogus'"});
  expect_refused(eval + "--protocol crossn --methods ceiling-others", 2, {"--methods: method 'ceiling-others' needs a size protocol"});
  expect_refused(eval + "--protocol alltoallv --methods bogus", 2, {"--methods: unknown method 'bogus'"});
  expect_refused(eval + "--protocol select --methods auto", 2, {"--methods is not available for --protocol select"});
  expect_refused(eval + "--protocol select --points p.csv", 2, {"--points is not available for --protocol select"});
  expect_refused(eval + "--protocol select --plan lattice:1", 2, {"--plan lattice:K needs K", "lattice:1 measures every cell"});
  expect_refused(eval + "--protocol select --plan lattice:+2", 2, {"--plan lattice:K needs K", "'+2' is not a whole number"});
  expect_refused(eval + "--protocol bogus", 2, {"unknown --protocol 'bogus' (known: interp2, sparse4, extrap, crossn, crosshw:K"});
  expect_refused(eval + "--protocol interp2:3", 2, {"--protocol interp2:3: interp2 takes no ':' argument"});
  // Good options: the unreadable input is what is wrong (bad data, exit 1, naming it).
  expect_refused(eval + "--protocol crosshw:2", 1, {"unreadable.txt"});
  // A leading zero is refused inside a compound value as in an integer option (C's rules read 010 as 8; issue 43:
  // crosshw:010 ran K = 10, lattice:04 ran 4).
  expect_refused(eval + "--protocol crosshw:010", 2, {"--protocol crosshw:K needs K", "'010' has a leading zero", "write 10"});
  expect_refused(eval + "--protocol select --plan lattice:04", 2, {"--plan lattice:K needs K", "'04' has a leading zero"});
  // A K the protocol reads runs as before.
  const CommandResult ok = arfit_here("eval samples.csv --protocol crosshw:7");
  EXPECT_NE(ok.exit_code, 2) << ok.output;
}

// --nvtx splits only an nsys cuda_gpu_trace into phases. Given with a vLLM profile or a kernel summary it was bad
// data (exit 1, naming the NVTX report as if that file were wrong); now, as other options an input does not
// read, a usage error naming --nvtx and the profile's format, checked before the report is read; nothing written.
TEST_F(Robustness, NvtxWithAProfileItCannotSplitIsAUsageError) {
  copy("models.json");
  fs::copy_file(kProfile, dir.file("profile.json"));
  fs::copy_file(kNsysKernSum, dir.file("kern_sum.csv"));
  const std::string nvtx = std::string(ARFIT_SOURCE_DIR) + "/tests/trace/data/nsys_nvtx_gpu_proj.csv";
  for (const char* command : {"whatif %s --models models.json --tp 8 -o out.csv", "breakdown %s -o out"}) {
    for (const auto& [profile, format] : std::vector<std::pair<std::string, std::string>>{
             {"profile.json", "is a vLLM layerwise profile (format vllm)"},
             {"kern_sum.csv", "is an nsys kernel summary (cuda_gpu_kern_sum, format nsys)"}}) {
      std::string args = command;
      args.replace(args.find("%s"), 2, profile);
      expect_refused(args + " --nvtx " + nvtx, 2, {"--nvtx " + nvtx + ": NVTX ranges split only an nsys cuda_gpu_trace", profile + " " + format});
      // The report is not read first: a missing one does not hide the usage error.
      expect_refused(args + " --nvtx missing.csv", 2, {"--nvtx missing.csv: NVTX ranges split only"});
    }
  }
}

// --fallback goes into the engine's code where no model answers (an enum member of the header, a JSON choice); a
// typo was written there as a strategy (`Strategy::NCLL = 100`), exit 0. Now it must name a strategy of the models
// or one of NCCL's own (forced variants included) or ONESHOT/TWOSHOT.
TEST_F(Robustness, FallbackNamesAStrategyAnEngineRuns) {
  copy("models.json");
  expect_refused("codegen models.json --format header -o t.h --fallback NCLL", 2,
                 {"--fallback: 'NCLL' is neither an all-reduce strategy of system"});
  // The threshold formats write no cell without a model: --fallback was ignored there, exit 0.
  expect_refused("codegen models.json --format vllm -o v.py --fallback TWOSHOT", 2,
                 {"--fallback: the vllm format writes rules between the modelled strategies"});
  for (const char* fallback : {"NCCL_SYMMETRIC", "NCCL_RING_LL128", "ONESHOT"}) {
    const CommandResult r = arfit_here(std::string("codegen models.json --format header -o t.h --fallback ") + fallback);
    EXPECT_EQ(r.exit_code, 0) << fallback << ": " << r.output;
  }
  // A fallback fills cells anywhere, and TensorRT-LLM's TWOSHOT throws where a cell holds fewer tokens than GPUs.
  expect_refused("codegen models.json --format header -o t2.h --fallback TWOSHOT", 2,
                 {"--fallback: TWOSHOT cannot fill cells without a model"});
}

// write_file_atomically creates no folder, so an output in a missing folder was found by the write: after the fit,
// the ingest or the codegen had run, as a failed run (exit 1, "cannot create the temporary file"), while eval's
// --json and arbench's --json were refused before any work as a usage error (2). Every single-file output is
// checked alike now (check_output_file). `plot -o FILE` went on to fail at the first figure with exit 1 ("cannot check
// the output path: Not a directory"); it is refused first, as breakdown refuses it.
TEST_F(Robustness, OutputsInAMissingFolderAreRefusedBeforeAnyWork) {
  copy("models.json");
  copy("samples.csv");
  fs::copy_file(kProfile, dir.file("profile.json"));
  const std::string missing = "the folder nodir does not exist";
  expect_refused("ingest samples.csv -o nodir/s.csv", 2, {"nodir/s.csv: " + missing});
  expect_refused("fit samples.csv -o nodir/m.json -q", 2, {"nodir/m.json: " + missing});
  expect_refused("codegen models.json --format json -o nodir/t.json", 2, {"nodir/t.json: " + missing});
  expect_refused("suggest models.json --json nodir/s.json", 2, {"nodir/s.json: " + missing});
  expect_refused("whatif profile.json --models models.json --tp 8 --hidden 4096 -o nodir/w.csv", 2, {"nodir/w.csv: " + missing});
  expect_refused("plot fit models.json samples.csv -o samples.csv", 2, {"samples.csv: is a regular file, not a folder"});
  // A file where a folder of the path would be, and a name longer than the system takes, were "cannot check the
  // output path: Not a directory" / "File name too long", exit 1: the option's value to correct.
  expect_refused("fit samples.csv -o samples.csv/m.json -q", 2, {"samples.csv/m.json: samples.csv is a regular file, not a folder"});
  expect_refused("codegen models.json --format json -o models.json/x/t.json", 2, {"models.json is a regular file, not a folder"});
  expect_refused("ingest samples.csv -o " + std::string(300, 'x') + ".csv", 2, {"File name too long"});
}

// A name that is not UTF-8 (a Latin-1 'µ' in a device name, a stray byte) was read and written back by ingest with
// exit 0, and fit failed after fitting with "[json.exception.type_error.316] invalid UTF-8 byte at index 20: 0xFF",
// naming no file, line or column: the models file's JSON writer refuses it. Names are checked as they are read now
// (name_problem), in every format, like control characters.
TEST_F(Robustness, NamesThatAreNotUtf8AreBadInputNamingTheColumn) {
  std::string latin1 = synthetic_samples();
  latin1.replace(latin1.find("ONESHOT"), 7, "ONE\xB5SHOT");
  const long line = static_cast<long>(std::count(latin1.begin(), latin1.begin() + static_cast<long>(latin1.find("ONE\xB5")), '\n')) + 1;
  dir.write("latin1.csv", latin1);
  const std::string where = "latin1.csv:" + std::to_string(line) + ": column 'strategy': byte 0xb5 at offset 3 is not UTF-8";
  expect_refused("ingest latin1.csv -o out.csv", 1, {where});
  expect_refused("fit latin1.csv -o out.json -q", 1, {where});
  // nccl-tests: the device name of the rank lines.
  std::string log = kNcclTestsLog;
  log.replace(log.find("Fancy GPU 9000"), 5, "Fanc\xFF");
  dir.write("nccl_allreduce.txt", log);
  expect_refused("fit nccl_allreduce.txt -o out.json -q", 1, {"nccl_allreduce.txt:", "is not UTF-8"});
  // A file name is any bytes: recorded in a JSON output (a models file's inputs, a table's models file), the bytes
  // that are not UTF-8 are written as U+FFFD. Both runs failed after the work with the JSON writer's type_error.
  dir.write("lat\xB5" ".csv", synthetic_samples());
  const CommandResult fit = arfit_here("fit 'lat\xB5" ".csv' -o 'm\xB5.json' -q");
  ASSERT_EQ(fit.exit_code, 0) << fit.output;
  const nlohmann::json models = nlohmann::json::parse(slurp(dir.file("m\xB5.json")));
  EXPECT_EQ(models.at("inputs").at(0).at("path"), "lat\xEF\xBF\xBD.csv");
  const CommandResult table = arfit_here("codegen 'm\xB5.json' --format json -o table.json");
  ASSERT_EQ(table.exit_code, 0) << table.output;
  EXPECT_NE(slurp(dir.file("table.json")).find("m\xEF\xBF\xBD.json"), std::string::npos);
}

// Each plot kind reads some of the options: one given to a kind that does not read it was ignored (`plot fit --tp 16`
// drew the fit figures with exit 0). --held-out samples are ones the fit did not see: the plot's own input, or the
// file the models were fitted from, was drawn as held out next to itself as fitted.
TEST_F(Robustness, PlotRefusesOptionsItsKindDoesNotReadAndHeldOutInputs) {
  copy("models.json");
  copy("samples.csv");
  expect_refused("plot fit models.json -o figs --tp 16", 2, {"--tp: plot fit does not read it (best, cross, diff, heatmap, regret, all do)"});
  expect_refused("plot fit models.json -o figs --protocol sparse4", 2, {"--protocol: plot fit does not read it (errors, all do)"});
  expect_refused("plot cross models.json -o figs --held-out samples.csv", 2, {"--held-out: plot cross does not read it (fit, all do)"});
  expect_refused("plot errors samples.csv -o figs --dtype fp16", 2, {"--dtype: plot errors does not read it"});
  expect_refused("plot index figs --tp 8", 2, {"--tp: plot index does not read it"});
  if (!have_gnuplot()) GTEST_SKIP() << "gnuplot is not installed: the --held-out cases run after its check";
  expect_refused("plot fit models.json samples.csv -o figs --held-out ./samples.csv", 2,
                 {"--held-out ./samples.csv is also an input of this plot"});
  expect_refused("plot fit models.json -o figs --held-out samples.csv", 2,
                 {"--held-out samples.csv: models.json was fitted from it"});
}

// eval --json wrote "gmae": 0, "median": 0, ... for a method or subset that answered no held-out point (crossn's
// `more` when no family spans more nodes), where the table shows '-': a consumer (plot errors) read 0 % error, a
// perfect method. The error figures are absent there now.
TEST_F(Robustness, EvalJsonHasNoErrorWhereNoPointWasAnswered) {
  std::string s = "#arfit-samples v1\ncollective,strategy,fusion,dtype,nranks,bytes,time_us\n";
  for (int n : {2, 4, 8})
    for (long b = 1024; b <= (64L << 20); b *= 2)
      s += "allreduce,NCCL,NONE,bf16," + std::to_string(n) + "," + std::to_string(b) + "," +
           std::to_string(5.0 + n + static_cast<double>(b) * (n - 1) / (n * 5e4)) + "\n";
  dir.write("counts.csv", s);
  const CommandResult r = arfit_here("eval counts.csv --protocol crossn --json e.json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const nlohmann::json j = nlohmann::json::parse(slurp(dir.file("e.json")));
  const nlohmann::json& more = j.at("by_nodes").at("more");
  ASSERT_EQ(more.at("curves"), 0);
  for (const auto& [name, m] : more.at("methods").items()) {
    EXPECT_EQ(m.at("points"), 0) << name;
    for (const char* k : {"gmae", "median", "p90", "max"}) EXPECT_FALSE(m.contains(k)) << name << " " << k << ": " << m.dump();
  }
  const nlohmann::json& same = j.at("by_nodes").at("same").at("methods").at("auto");
  EXPECT_GT(same.at("points").get<int>(), 0);
  EXPECT_GT(same.at("gmae").get<double>(), 0);
}

// ---------------------------------------------------------------- resource limits and names

// ulimit -f with SIGXFSZ at its default action (WriteFailuresSayTheSystemsReason ignores it with trap): the signal
// killed arfit mid-write (exit 153) and left NAME.tmp.PID behind. Now the write fails with EFBIG, reported and
// cleaned up as a full disk is; the old output stays byte-identical. So does a write to standard output redirected to
// a file (it registers no temporary file: the signal is caught from the start of main). gnuplot, which arfit runs,
// keeps the default.
TEST_F(Robustness, FileSizeLimitIsAFailedWriteNotAKill) {
  copy("samples.csv");
  copy("models.json");
  for (const std::string args : {"fit samples.csv -o models.json -q", "ingest samples.csv -o big.csv -q",
                                  "codegen models.json --format json -o table.json"}) {
    const auto before = snapshot(dir.path());
    const CommandResult r = run_command("cd " + dir.path().string() + " && sh -c 'ulimit -f 1; exec " + arfit_bin() + " " + args + "'");
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(": cannot write: File too large"), std::string::npos) << args << "\n" << r.output;
    expect_unchanged(before, dir.path(), args);
  }
  // Standard output redirected to a file: a failed run too, as on a full disk (the file holds what fitted).
  for (const auto& [args, says] : {std::pair<std::string, std::string>{"ingest samples.csv -o - -q", "-: cannot write standard output: File too large"},
                                   {"predict models.json --collective allreduce --nranks 8 --bytes 1024:1073741824",
                                    "writing standard output failed: File too large"}}) {
    const CommandResult r = run_command("cd " + dir.path().string() + " && sh -c 'ulimit -f 1; exec " + arfit_bin() + " " + args +
                                        " > stdout.txt'");
    EXPECT_EQ(r.exit_code, 1) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << args << "\n" << r.output;
    fs::remove(dir.file("stdout.txt"));
  }
}

// Runs `args` in `dir` under ulimit -v `kib`.
CommandResult run_with_memory_limit(const TempDir& dir, long kib, const std::string& args) {
  return run_command("cd " + dir.path().string() + " && sh -c 'ulimit -v " + std::to_string(kib) + "; exec " + arfit_bin() +
                     " " + args + "'");
}

// ulimit -v low enough that fitting runs out of memory: a failed run (exit 1, "out of memory"), never an abort.
// nlohmann::json's destructors allocate, so a std::bad_alloc unwinding through a half-copied models document reached
// std::terminate (exit 134, a core dump) at most limits between "cannot start" and "enough"; a std::bad_alloc in a
// fitting thread did too. The limits are found on this machine: from the least that runs `arfit --version` (the
// shared libraries' mappings) up in steps until the fit succeeds.
TEST_F(Robustness, OutOfMemoryIsAFailedRunNotAnAbort) {
  std::string s = "#arfit-samples v1\ncollective,strategy,fusion,dtype,nranks,bytes,time_us\n";
  for (int n = 2; n <= 200; ++n)
    for (const char* strategy : {"NCCL", "ONESHOT"})
      for (long b = 1024; b <= (64L << 20); b *= 4)
        s += std::string("allreduce,") + strategy + ",NONE,bf16," + std::to_string(n) + "," + std::to_string(b) + "," +
             std::to_string(5.0 + n + static_cast<double>(b) / 5e4) + "\n";
  dir.write("many.csv", s);
  long lo = 1 << 10, hi = 1L << 24;  // KiB: the least limit that starts arfit lies between
  // A sanitizer build maps terabytes of shadow memory at start: no ulimit -v lets it run, so nothing here is testable.
  if (run_with_memory_limit(dir, hi, "--version").exit_code != 0)
    GTEST_SKIP() << "arfit does not start under ulimit -v " << hi << " KiB (a sanitizer build reserves more): nothing to test";
  while (hi - lo > 1024) {
    const long mid = (lo + hi) / 2;
    (run_with_memory_limit(dir, mid, "--version").exit_code == 0 ? hi : lo) = mid;
  }
  int out_of_memory = 0;
  bool fitted = false;
  for (long kib = hi; kib < hi + (1L << 20) && !fitted; kib += 4096) {
    const auto before = snapshot(dir.path());
    const CommandResult r = run_with_memory_limit(dir, kib, "fit many.csv -o m.json -q");
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << "ulimit -v " << kib << ": exit " << r.exit_code << "\n" << r.output;
    if (r.exit_code == 0) {
      fitted = true;
      break;
    }
    ++out_of_memory;
    EXPECT_NE(r.output.find("arfit: error: out of memory"), std::string::npos) << "ulimit -v " << kib << "\n" << r.output;
    expect_unchanged(before, dir.path(), "ulimit -v " + std::to_string(kib));
  }
  EXPECT_TRUE(fitted);
  EXPECT_GT(out_of_memory, 0) << "no limit ran out of memory: the test did not test";
}

// A file that already has the temporary's name (a stale temporary of an earlier process with this pid, the
// temporary of a process with the same pid in another container writing into a shared folder, a user's file) was
// removed: write_file_atomically unlinked NAME.tmp.PID and StagingFolder emptied .arfit-WHAT.tmp.PID. Both are kept
// now and the temporary takes the next free name. `exec` keeps the shell's pid, so $$ is arfit's.
TEST_F(Robustness, FilesWithTheTemporarysNameAreKept) {
  copy("samples.csv");
  const std::string in_dir = "cd " + dir.path().string() + " && ";
  CommandResult r = run_command(in_dir + "sh -c 'echo mine > m.json.tmp.$$; exec " + arfit_bin() + " fit samples.csv -o m.json -q'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(slurp(dir.file("m.json")).find("arfit-models"), std::string::npos);
  r = run_command(in_dir + "sh -c 'mkdir -p out/.arfit-breakdown.tmp.$$ && echo mine > out/.arfit-breakdown.tmp.$$/f; exec " +
                  arfit_bin() + " breakdown " + kProfile + " -o out --no-figures'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir.file("out/comm_share.csv"))) << r.output;
  std::vector<std::string> left;
  for (const auto& e : fs::recursive_directory_iterator(dir.path()))
    if (e.path().string().find(".tmp.") != std::string::npos) left.push_back(fs::relative(e.path(), dir.path()).string());
  std::sort(left.begin(), left.end());
  ASSERT_EQ(left.size(), 3u) << ::testing::PrintToString(left);  // the two files and the folder holding one: no other
  EXPECT_EQ(slurp(dir.file(left[0])), "mine\n");
  EXPECT_EQ(slurp(dir.file(left[2])), "mine\n");
  EXPECT_EQ(slurp(dir.file(left[1] + "/f")), "mine\n");
}

// An output name of NAME_MAX bytes is a name the folder takes, so arfit writes it: its temporary
// ("NAME.tmp.PID", longer) was refused by the file system after the work (exit 1, "File name too long"). The
// temporary's name part is shortened now. One byte more is the option's error (exit 2) before any work.
TEST_F(Robustness, OutputNamesUpToNameMaxAreWritten) {
  copy("samples.csv");
  copy("models.json");
  const long name_max = ::pathconf(dir.path().c_str(), _PC_NAME_MAX);
  ASSERT_GT(name_max, 16);
  const std::string longest = std::string(static_cast<std::size_t>(name_max) - 5, 'x') + ".json";
  for (const std::string args : {"fit samples.csv -q -o ", "codegen models.json --format json -o "}) {
    const CommandResult r = arfit_here(args + longest);
    EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.output;
    EXPECT_TRUE(fs::exists(dir.file(longest))) << args;
    for (const auto& e : fs::directory_iterator(dir.path()))
      EXPECT_EQ(e.path().string().find(".tmp."), std::string::npos) << args << ": left " << e.path();
    fs::remove(dir.file(longest));
  }
  expect_refused("fit samples.csv -q -o y" + longest, 2, {"File name too long"});
}
