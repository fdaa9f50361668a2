// End-to-end: `mpirun -np 2 arbench --backend host` on small grids.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <sys/stat.h>

#include "bench/grid.h"
#include "io/sample_csv_file.h"
#include "model/sample_csv.h"
#include "test_support.h"

using namespace arfit;
using arfit::testing::CommandResult;
using arfit::testing::run_command;
using arfit::testing::TempDir;

namespace {

std::string mpirun(const std::string& args, int np = 2) {
  return "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=0 " +
         std::string(ARFIT_MPIEXEC) + " -np " + std::to_string(np) + " " + ARBENCH_BIN + " " + args;
}

// Planned case keys, from --dry-run (one "index<TAB>description" line per case), rebuilt into keys by
// running the same grid: we compare descriptions instead, which name every key field.
std::vector<std::string> planned_descriptions(const std::string& grid) {
  CommandResult r = run_command(mpirun(grid + " --dry-run"));
  EXPECT_EQ(r.exit_code, 0) << r.output;
  std::vector<std::string> out;
  std::istringstream in(r.output);
  std::string line;
  while (std::getline(in, line)) {
    auto tab = line.find('\t');
    if (line.empty() || line[0] == '#' || tab == std::string::npos) continue;
    out.push_back(line.substr(tab + 1));
  }
  return out;
}

std::string describe(const Sample& s) {
  bench::Case c = bench::case_of_sample(s);
  if (s.collective == Collective::AllToAllV) c.split = "cyclic";  // the default split of these grids
  return c.describe();
}

// Every planned case exactly once, all ok with positive, ordered timings and zero wrong elements.
void expect_complete_and_valid(const std::string& csv, const std::vector<std::string>& planned) {
  SampleFile f = read_samples_csv(csv);
  std::map<std::string, int> seen;
  for (const Sample& s : f.samples) {
    ++seen[describe(s)];
    EXPECT_TRUE(s.ok()) << describe(s) << " note=" << (s.extra.count("note") ? s.extra.at("note") : "");
    EXPECT_GT(s.time_us, 0) << describe(s);
    EXPECT_LE(s.p10_us, s.time_us) << describe(s);
    EXPECT_LE(s.time_us, s.p90_us) << describe(s);
    EXPECT_LE(s.min_us, s.p10_us);
    EXPECT_LE(s.p90_us, s.max_us);
    EXPECT_EQ(s.wrong, 0) << describe(s);
    EXPECT_EQ(s.backend, "arbench-host");
  }
  EXPECT_EQ(f.samples.size(), planned.size());
  for (const auto& p : planned) EXPECT_EQ(seen[p], 1) << p;
}

const std::string kTokenGrid =
    "--backend host --tokens 1,8,64 --hidden 256,1024 --fusion NONE,RESIDUAL_RMS_NORM --dtype bf16,fp32 -w 2 -n 8 -q";
const std::string kByteGrid =
    "--backend host --collective allreduce,allgather,reducescatter,alltoall,alltoallv --bytes 64,4K,256K --dtype fp16,fp32 "
    "-w 2 -n 8 -q";

}  // namespace

TEST(BenchMpi, TokenGridEveryCaseOnceWithValidTimings) {
  TempDir d;
  const std::string out = d.file("s.csv");
  auto planned = planned_descriptions(kTokenGrid);
  // MPI, ONESHOT, TWOSHOT with both fusions, MULTIMEM_ONESHOT and MULTIMEM_TWOSHOT with NONE only (the default
  // strategies skip the fusions a strategy lacks).
  ASSERT_EQ(planned.size(), 6u * (3u * 2u + 2u) * 2u);
  CommandResult r = run_command(mpirun(kTokenGrid + " -o " + out));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_complete_and_valid(out, planned);
  // The run header says where and how.
  SampleFile f = read_samples_csv(out);
  std::map<std::string, std::string> meta(f.meta.begin(), f.meta.end());
  for (const char* k : {"hostnames", "device", "mpi", "command", "plan", "grid", "started", "world_size"})
    EXPECT_FALSE(meta[k].empty()) << k;
  EXPECT_EQ(meta["plan"], "full");
  EXPECT_EQ(meta["world_size"], "2");
  EXPECT_EQ(meta["cuda_graph"], "off");  // eager launches (graphs are a GPU-backend option)
}

TEST(BenchMpi, AllCollectivesByteSweep) {
  TempDir d;
  const std::string out = d.file("s.csv");
  auto planned = planned_descriptions(kByteGrid);
  // allreduce: 5 strategies (MPI, ONESHOT, TWOSHOT, MULTIMEM_ONESHOT, MULTIMEM_TWOSHOT); others MPI only:
  // (5 + 4) x 3 sizes x 2 dtypes.
  ASSERT_EQ(planned.size(), 9u * 3u * 2u);
  CommandResult r = run_command(mpirun(kByteGrid + " -o " + out + " --json " + d.file("s.json")));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  expect_complete_and_valid(out, planned);
  EXPECT_TRUE(std::filesystem::exists(d.file("s.json")));
  bool saw_split = false;
  for (const Sample& s : read_samples_csv(out).samples)
    if (s.collective == Collective::AllToAllV) saw_split = saw_split || !s.splits.empty();
  EXPECT_TRUE(saw_split);
}

TEST(BenchMpi, LatticePlanIsRecordedAndThinsTheGrid) {
  TempDir d;
  const std::string grid = "--backend host --strategy ONESHOT --tokens 1:16 --hidden 256:2048 --plan lattice:2 -w 1 -n 4 -q";
  auto planned = planned_descriptions(grid);
  // tokens 1,2,4,8,16 -> 1,4,16; hidden 256..2048 -> 256,1024,2048.
  ASSERT_EQ(planned.size(), 9u);
  ASSERT_EQ(run_command(mpirun(grid + " -o " + d.file("s.csv"))).exit_code, 0);
  SampleFile f = read_samples_csv(d.file("s.csv"));
  std::map<std::string, std::string> meta(f.meta.begin(), f.meta.end());
  EXPECT_EQ(meta["plan"], "lattice:2");
  EXPECT_EQ(meta["full_points"], "20");
  EXPECT_EQ(meta["planned_points"], "9");
  expect_complete_and_valid(d.file("s.csv"), planned);
}

TEST(BenchMpi, ResumeAfterAKillCompletesWithoutDuplicates) {
  TempDir d;
  const std::string out = d.file("s.csv");
  auto planned = planned_descriptions(kTokenGrid);
  // Rank 0 SIGKILLs itself after 7 cases: a real crash in the middle of the run. Its rows are in the journal;
  // the output was never created.
  CommandResult crash = run_command(mpirun(kTokenGrid + " -o " + out + " --test-crash-after 7"));
  EXPECT_NE(crash.exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_EQ(read_samples_csv(out + ".partial").samples.size(), 7u);
  // Without --resume an existing journal is refused, before anything runs.
  CommandResult refused = run_command(mpirun(kTokenGrid + " -o " + out));
  EXPECT_EQ(refused.exit_code, 2);
  EXPECT_NE(refused.output.find("--resume"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find(out + ".partial' exists"), std::string::npos) << refused.output;
  CommandResult resumed = run_command(mpirun(kTokenGrid + " -o " + out + " --resume"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  expect_complete_and_valid(out, planned);
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
  // A second resume finds nothing to do and adds nothing.
  ASSERT_EQ(run_command(mpirun(kTokenGrid + " -o " + out + " --resume")).exit_code, 0);
  EXPECT_EQ(read_samples_csv(out).samples.size(), planned.size());
  // The schema line and the header appear once.
  const std::string text = arfit::testing::slurp(out);
  EXPECT_EQ(text.find("#arfit-samples", 1), std::string::npos);
  // Resuming with another grid is refused, naming --resume.
  CommandResult other = run_command(mpirun("--backend host --tokens 1 --hidden 256 -o " + out + " --resume"));
  EXPECT_EQ(other.exit_code, 2);
  EXPECT_NE(other.output.find("--resume"), std::string::npos);
}

// --overwrite used to truncate the output at the start: a run killed midway destroyed the old complete file
// and left a partial one. Now the old output stays byte-identical until the run ends; the killed run's rows
// are in the journal, and --resume completes the output from there.
TEST(BenchMpi, KilledOverwriteLeavesTheOldOutputThenResumeReplacesIt) {
  TempDir d;
  const std::string out = d.file("s.csv");
  const std::string old_grid = "--backend host --strategy MPI --tokens 1 --hidden 256 -w 1 -n 4 -q";
  ASSERT_EQ(run_command(mpirun(old_grid + " -o " + out)).exit_code, 0);
  const std::string old_output = arfit::testing::slurp(out);
  ASSERT_EQ(read_samples_csv(out).samples.size(), 1u);
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));  // a finished run leaves no journal
  auto planned = planned_descriptions(kTokenGrid);
  CommandResult crash = run_command(mpirun(kTokenGrid + " --overwrite -o " + out + " --test-crash-after 5"));
  EXPECT_NE(crash.exit_code, 0);
  EXPECT_EQ(arfit::testing::slurp(out), old_output);
  EXPECT_EQ(read_samples_csv(out + ".partial").samples.size(), 5u);
  CommandResult resumed = run_command(mpirun(kTokenGrid + " -o " + out + " --resume"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  expect_complete_and_valid(out, planned);
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
  // --overwrite of a finished output that ends normally replaces it (and keeps its permissions).
  std::filesystem::permissions(out, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  ASSERT_EQ(run_command(mpirun(old_grid + " --overwrite -o " + out)).exit_code, 0);
  EXPECT_EQ(read_samples_csv(out).samples.size(), 1u);
  EXPECT_EQ(std::filesystem::status(out).permissions(),
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
}

TEST(BenchMpi, ImpossibleGridsFailBeforeMeasuringNamingTheOption) {
  TempDir d;
  const std::string out = d.file("s.csv");
  const std::map<std::string, std::string> bad = {
      {"--tokens 8 --hidden 256 --tp 4", "--tp"},
      {"--tokens 8 --hidden 256 --workspace 1K", "--workspace"},
      {"--tokens 8 --hidden 256 --backend nccl", "--backend"},
      {"--tokens 8 --hidden 256 --strategy FASTEST", "--strategy"},
      {"--bytes 64 --fusion RESIDUAL_RMS_NORM", "--fusion"},
      {"--tokens 8", "--hidden"},
      {"--tokens 8 --hidden 256 --plan random:2:1", "--plan"},
      {"--tokens 8 --hidden 256 --iters -3", "--iters"},
      {"--tokens 8 --hidden 256 --bogus", "--bogus"},
      {"--tokens 8 --hidden 256 -G 1", "--cuda-graph"},  // the host backend has no CUDA graphs
  };
  for (const auto& [args, option] : bad) {
    CommandResult r = run_command(mpirun(args + " -o " + out));
    EXPECT_EQ(r.exit_code, 2) << args << "\n" << r.output;
    EXPECT_NE(r.output.find(option), std::string::npos) << args << "\n" << r.output;
    EXPECT_FALSE(std::filesystem::exists(out)) << args;
    EXPECT_FALSE(std::filesystem::exists(out + ".partial")) << args;
  }
}

// An output whose folder cannot be made (under a regular file, or in /proc) ended in MPI_Abort: at the first case
// (the journal opened then), or before it (the path check's system error was not caught). Now rank 0 opens the
// journal before the run and every rank leaves with the error, nothing measured, no MPI_Abort. Both are the -o
// value's to correct (exit 2); a regular file where the folder would be is named ("file is a regular file, not a
// folder"; it was exit 1, "cannot check the output path: Not a directory").
TEST(BenchMpi, UnwritableOutputFolderIsRefusedBeforeMeasuring) {
  TempDir d;
  const std::string file = d.write("file", "x\n");
  for (const auto& [out, status] : {std::pair{file + "/s.csv", 2}, std::pair{std::string("/proc/arfit-none/s.csv"), 2}}) {
    const CommandResult r = run_command(mpirun("--backend host --strategy MPI --bytes 1K -w 1 -n 2 -q -o " + out));
    EXPECT_EQ(r.exit_code, status) << out << "\n" << r.output;
    EXPECT_NE(r.output.find("arbench: error: "), std::string::npos) << out << "\n" << r.output;
    EXPECT_EQ(r.output.find("MPI_ABORT"), std::string::npos) << out << "\n" << r.output;
  }
  EXPECT_NE(run_command(mpirun("--backend host --strategy MPI --bytes 1K -w 1 -n 2 -q -o " + file + "/s.csv"))
                .output.find(file + " is a regular file, not a folder"),
            std::string::npos);
  EXPECT_EQ(arfit::testing::slurp(file), "x\n");
  // --json into a missing folder failed after the whole run (MPI_Abort); now refused before it.
  const std::string out = d.file("s.csv");
  const CommandResult json = run_command(mpirun("--backend host --strategy MPI --bytes 1K -w 1 -n 2 -q -o " + out +
                                                " --json " + d.file("missing/j.json")));
  EXPECT_EQ(json.exit_code, 2) << json.output;
  EXPECT_NE(json.output.find("the folder"), std::string::npos) << json.output;
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
}

TEST(BenchMpi, TimedOutSharedMemoryCaseIsRecordedAndTheRunContinues) {
  TempDir d;
  const std::string out = d.file("s.csv");
  // Case 1 is ONESHOT at tokens=1; rank 1 withholds itself from its barrier until the 1 s timeout.
  const std::string grid = "--backend host --strategy MPI,ONESHOT,TWOSHOT --tokens 1,8 --hidden 256 -w 1 -n 4 -q --timeout 1";
  CommandResult r = run_command(mpirun(grid + " -o " + out + " --test-hang-case 1"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("timeout"), std::string::npos) << r.output;
  SampleFile f = read_samples_csv(out);
  ASSERT_EQ(f.samples.size(), 6u);
  for (std::size_t i = 0; i < f.samples.size(); ++i) {
    if (i == 1) {
      EXPECT_FALSE(f.samples[i].ok());
      EXPECT_EQ(f.samples[i].strategy, "ONESHOT");
      EXPECT_NE(f.samples[i].extra["note"].find("timeout"), std::string::npos);
    } else {
      EXPECT_TRUE(f.samples[i].ok()) << i << " " << f.samples[i].extra["note"];  // later shm cases still work
    }
  }
  // --on-timeout stop: the run ends after the timed-out case, a failed run (status 1).
  CommandResult s = run_command(mpirun(grid + " -o " + d.file("t.csv") + " --test-hang-case 1 --on-timeout stop"));
  EXPECT_EQ(s.exit_code, 1) << s.output;
  EXPECT_EQ(read_samples_csv(d.file("t.csv")).samples.size(), 2u);
}

// The note of a timed-out case says the --timeout given, as the header's timeout_s does: a fractional one read
// "timeout after 0 s" (cut to an int). Each case of 31 all-reduces of 1 MiB outlasts 1 ms, far from the hard limit.
TEST(BenchMpi, TimeoutNoteSaysTheTimeoutGiven) {
  TempDir d;
  const std::string out = d.file("s.csv");
  CommandResult r = run_command(mpirun("--backend host --strategy MPI --bytes 1M -w 1 -n 30 -q --timeout 0.001 -o " + out));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  SampleFile f = read_samples_csv(out);
  ASSERT_EQ(f.samples.size(), 1u) << r.output;
  EXPECT_FALSE(f.samples[0].ok());
  EXPECT_EQ(f.samples[0].extra["note"], "timeout after 0.001 s");
  std::map<std::string, std::string> meta(f.meta.begin(), f.meta.end());
  EXPECT_EQ(meta["timeout_s"], "0.001");
}

// A kernel that traps (its barrier timed out before the watchdog's abort, here after 300 ms) is that case's
// error, recorded on every rank; the run does not end in MPI_Abort, the ranks recover and the later cases work.
TEST(BenchMpi, TrappedHostKernelIsTheCasesErrorAndTheRunContinues) {
  TempDir d;
  const std::string out = d.file("s.csv");
  const std::string grid = "--backend host --strategy MPI,ONESHOT,TWOSHOT --tokens 1,8 --hidden 256 -w 1 -n 4 -q --timeout 5";
  CommandResult r =
      run_command("ARFIT_HOST_BARRIER_TIMEOUT_MS=300 " + mpirun(grid + " -o " + out + " --test-hang-case 1"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_EQ(r.output.find("MPI_ABORT"), std::string::npos) << r.output;
  SampleFile f = read_samples_csv(out);
  ASSERT_EQ(f.samples.size(), 6u) << r.output;
  for (std::size_t i = 0; i < f.samples.size(); ++i) {
    if (i == 1) {
      EXPECT_FALSE(f.samples[i].ok());
      EXPECT_NE(f.samples[i].extra["note"].find("error: kernel trapped on the host"), std::string::npos)
          << f.samples[i].extra["note"];
      EXPECT_NE(f.samples[i].extra["note"].find("a peer never arrived"), std::string::npos);
    } else {
      EXPECT_TRUE(f.samples[i].ok()) << i << " " << f.samples[i].extra["note"];
    }
  }
}

TEST(BenchMpi, HungMpiCollectiveIsRecordedThenResumeContinues) {
  TempDir d;
  const std::string out = d.file("s.csv");
  const std::string grid = "--backend host --strategy MPI --tokens 1,8 --hidden 256 -w 1 -n 4 -q --timeout 1";
  // Rank 1 never enters MPI_Allreduce of case 0: nothing can interrupt rank 0's call; the hard timeout
  // records the case and ends the job.
  // The job ends without the run ending: the recorded case is in the journal, the output not yet written.
  CommandResult r = run_command(mpirun(grid + " -o " + out + " --test-hang-case 0"));
  EXPECT_NE(r.exit_code, 0) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
  SampleFile f = read_samples_csv(out + ".partial");
  ASSERT_EQ(f.samples.size(), 1u);
  EXPECT_FALSE(f.samples[0].ok());
  EXPECT_NE(f.samples[0].extra["note"].find("hung"), std::string::npos);
  CommandResult resumed = run_command(mpirun(grid + " -o " + out + " --resume"));
  EXPECT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(read_samples_csv(out).samples.size(), 2u);
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
}

// Ranks started with different command lines (an MPMD launch, a wrapper script that differs per node) used to
// pair unlike collectives: a longer grid on rank 0 sent rank 1 past the end of its own (bad_alloc), unlike
// sizes aborted in MPI_Allreduce (MPI_ERR_TRUNCATE), and a rank given --dry-run left rank 0 waiting forever.
// Now every rank compares what it planned before its first collective: usage error (2), nothing written.
TEST(BenchMpi, RanksWithDifferentOptionsAreRefusedBeforeMeasuring) {
  TempDir d;
  const std::string out = d.file("s.csv");
  const std::string env = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 timeout 120 ";
  const std::string rank = std::string(" -np 1 ") + ARBENCH_BIN + " --backend host --strategy MPI -w 1 -n 2 -q -o " + out;
  for (const std::string& second : {std::string(" --bytes 1K"), std::string(" --bytes 2K:16K"),
                                    std::string(" --bytes 1K:8K --timeout 5"), std::string(" --bytes 1K:8K --dry-run")}) {
    const CommandResult r = run_command(env + ARFIT_MPIEXEC + rank + " --bytes 1K:8K :" + rank + second);
    EXPECT_EQ(r.exit_code, 2) << second << "\n" << r.output;
    EXPECT_NE(r.output.find("the ranks were started with different options"), std::string::npos) << second << "\n" << r.output;
    EXPECT_FALSE(std::filesystem::exists(out)) << second;
    EXPECT_FALSE(std::filesystem::exists(out + ".partial")) << second;
  }
  // A bad option on one rank only is that rank's usage error, said by that rank.
  const CommandResult bad = run_command(env + ARFIT_MPIEXEC + rank + " --bytes 1K :" + rank + " --bytes 1K --bogus");
  EXPECT_EQ(bad.exit_code, 2) << bad.output;
  EXPECT_NE(bad.output.find("arbench[rank 1]: error: option --bogus"), std::string::npos) << bad.output;
  // One rank alone given --help or --version: the refusal says which rank asked for what, and which option differed.
  for (const auto& [second, named] : {std::pair{std::string(" --bytes 1K --help"), std::string("rank 1 was given --help")},
                                      std::pair{std::string(" --bytes 1K --version"), std::string("rank 1 was given --version")},
                                      std::pair{std::string(" --bytes 1K --buffers 3"), std::string("rank 1 differs from rank 0 in --buffers")},
                                      std::pair{std::string(" --bytes 1K --bogus"), std::string("rank 1 has a usage error in option --bogus")}}) {
    const CommandResult r = run_command(env + ARFIT_MPIEXEC + rank + " --bytes 1K :" + rank + second);
    EXPECT_EQ(r.exit_code, 2) << second << "\n" << r.output;
    EXPECT_NE(r.output.find(named), std::string::npos) << second << "\n" << r.output;
    EXPECT_FALSE(std::filesystem::exists(out)) << second;
  }
  // The same command line on every rank still runs.
  EXPECT_EQ(run_command(env + ARFIT_MPIEXEC + rank + " --bytes 1K :" + rank + " --bytes 1K").exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(out));
}

// --help printed nothing and failed ("empty output path", exit 2) once the ranks began agreeing on the run
// before it: the help is the answer, on standard output, exit 0, whether or not mpirun launches it.
TEST(BenchMpi, HelpPrintsTheOptionsAndSucceeds) {
  for (const std::string& cmd : {std::string(ARBENCH_BIN) + " --help", std::string(ARBENCH_BIN) + " -h", mpirun("--help")}) {
    const CommandResult r = run_command(cmd);
    EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("--backend"), std::string::npos) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find("--plan"), std::string::npos) << cmd << "\n" << r.output;
    EXPECT_EQ(r.output.find("arbench: error"), std::string::npos) << cmd << "\n" << r.output;
  }
}

// A failure on a rank other than 0 — the backend's creation, a group's setup, a case's init or its check —
// printed nothing before mpirun's abort text (a check that threw before its collective left rank 0's collective
// to be paired with rank 1's next agreement: MPI_ERR_TRUNCATE, exit 15). Now that rank says its reason, naming
// itself, every rank leaves (the watchdog ends a peer's wait in the collective it left) and the run fails with 1.
TEST(BenchMpi, AFailureOnAnotherRankIsSaidByThatRankAndFailsTheRun) {
  TempDir d;
  for (const std::string stage : {"backend", "group", "init", "check"}) {
    const std::string out = d.file(stage + ".csv");
    const CommandResult r = run_command(
        "timeout 120 env " + mpirun("--backend host --strategy MPI --bytes 1K -w 1 -n 2 -q --timeout 1 -o " + out + " --test-fail 1:" + stage));
    EXPECT_EQ(r.exit_code, 1) << stage << "\n" << r.output;
    EXPECT_NE(r.output.find("arbench[rank 1]"), std::string::npos) << stage << "\n" << r.output;
    EXPECT_NE(r.output.find("injected failure at " + stage), std::string::npos) << stage << "\n" << r.output;
    EXPECT_EQ(r.output.find("MPI_ERR_TRUNCATE"), std::string::npos) << stage << "\n" << r.output;
  }
}

// -o a symbolic link to a file on another file system (the output on /dev/shm, the link in the working folder):
// the journal streamed beside the link and its final rename over the link's target crossed file systems (EXDEV,
// "Invalid cross-device link", exit 1 after the whole run). Now the journal lies beside the target: the run
// succeeds, the target holds the samples, the link stays a link, and no journal is left.
TEST(BenchMpi, OutputLinkedToAnotherFileSystemIsReplacedInPlace) {
  TempDir d;
  std::string shm = "/dev/shm/arfit-test-XXXXXX";
  if (!::mkdtemp(shm.data())) GTEST_SKIP() << "no /dev/shm";
  struct RemoveAll {
    std::string dir;
    ~RemoveAll() {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  } cleanup{shm};
  struct stat here {}, there {};
  if (::stat(d.path().c_str(), &here) != 0 || ::stat(shm.c_str(), &there) != 0 || here.st_dev == there.st_dev)
    GTEST_SKIP() << "/dev/shm is on the temporary folder's file system";
  const std::string target = shm + "/s.csv", link = d.file("s.csv");
  auto write_target = [&](const std::string& text) { std::ofstream(target, std::ios::binary) << text; };
  write_target("old\n");
  std::filesystem::create_symlink(target, link);
  const std::string grid = "--backend host --strategy MPI --bytes 1K:2K -w 1 -n 2 -q";
  const CommandResult r = run_command(mpirun(grid + " -o " + link + " --overwrite"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(read_samples_csv(target).samples.size(), 2u);
  EXPECT_FALSE(std::filesystem::exists(link + ".partial"));
  EXPECT_FALSE(std::filesystem::exists(target + ".partial"));
  // Killed and resumed through the link: the journal beside the target is found and continued.
  write_target("");
  EXPECT_NE(run_command(mpirun("--backend host --strategy MPI --bytes 1K:8K -w 1 -n 2 -q -o " + link + " --test-crash-after 2")).exit_code, 0);
  EXPECT_TRUE(std::filesystem::exists(target + ".partial"));
  const CommandResult resumed = run_command(mpirun("--backend host --strategy MPI --bytes 1K:8K -w 1 -n 2 -q -o " + link + " --resume"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_EQ(read_samples_csv(target).samples.size(), 4u);
  EXPECT_FALSE(std::filesystem::exists(target + ".partial"));
}

TEST(BenchMpi, VersionPrintsTheVersionAndSucceeds) {
  for (const std::string& cmd : {std::string(ARBENCH_BIN) + " --version", mpirun("--version")}) {
    const CommandResult r = run_command(cmd);
    EXPECT_EQ(r.exit_code, 0) << cmd << "\n" << r.output;
    EXPECT_NE(r.output.find(std::string("arbench (arfit ") + ARFIT_VERSION + ")"), std::string::npos) << cmd << "\n" << r.output;
  }
}

// The plan of --dry-run is the command's output: written to a full device it is a failed run (1), not success.
TEST(BenchMpi, DryRunToAFullDeviceFails) {
  if (!std::filesystem::exists("/dev/full")) GTEST_SKIP() << "no /dev/full on this system";
  const std::string dry = std::string(ARBENCH_BIN) + " --backend host --strategy MPI --tp 1 --bytes 1K:64K --dry-run";
  const CommandResult full = run_command("( " + dry + " 2>&1 >/dev/full )");
  EXPECT_EQ(full.exit_code, 1) << full.output;
  EXPECT_NE(full.output.find("arbench: error: writing standard output failed: No space left on device"), std::string::npos)
      << full.output;
  EXPECT_EQ(run_command(dry + " >/dev/null").exit_code, 0);
}

// A resumed run's new rows took the new session's source ("arbench <start>"), and arfit tells machines apart by
// source when a file names no system: a run killed after 3 cases and resumed read as two machines, one with a
// single size per curve. Now the resumed rows keep the run's source: one group per curve. And a journal measured
// on another device (a restarted job on other hardware) is refused before anything runs, its bytes untouched.
TEST(BenchMpi, ResumedRunStaysOneRunOnOneDevice) {
  TempDir d;
  const std::string out = d.file("s.csv");
  const std::string grid = "--backend host --strategy MPI --bytes 1K:64K -w 1 -n 2 -q";
  EXPECT_NE(run_command(mpirun(grid + " -o " + out + " --test-crash-after 3")).exit_code, 0);
  // Another second on the clock: the new session's start time differs from the run's.
  run_command("sleep 1.1");
  const std::string journal = arfit::testing::slurp(out + ".partial");
  std::string other = journal;
  const std::size_t device = other.find("# device: ");
  ASSERT_NE(device, std::string::npos);
  other.replace(device, other.find('\n', device) - device, "# device: Other Machine 9000");
  d.write("s.csv.partial", other);
  const CommandResult refused = run_command(mpirun(grid + " -o " + out + " --resume"));
  EXPECT_EQ(refused.exit_code, 2) << refused.output;
  EXPECT_NE(refused.output.find("was measured on 'Other Machine 9000', this run is on"), std::string::npos) << refused.output;
  EXPECT_EQ(arfit::testing::slurp(out + ".partial"), other);
  d.write("s.csv.partial", journal);
  const CommandResult resumed = run_command(mpirun(grid + " -o " + out + " --resume"));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const SampleFile f = read_samples_csv(out);
  ASSERT_EQ(f.samples.size(), 7u);
  std::set<std::string> sources;
  for (const Sample& s : f.samples) sources.insert(s.source);
  EXPECT_EQ(sources.size(), 1u) << *sources.begin() << " ... " << *sources.rbegin();
}
