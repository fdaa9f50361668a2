// Output handling: the journal NAME.partial and --resume / --overwrite (partial last lines, mismatched grids,
// existing files), and the reporter that moves the journal over the output when the run ends.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <map>
#include <set>

#include "bench/reporter.h"
#include "bench/run_info.h"
#include "io/atomic_output.h"
#include "model/errors.h"
#include "model/sample_csv.h"
#include "test_support.h"

using namespace arfit;
using namespace arfit::bench;
using arfit::testing::TempDir;

namespace {
std::string file_with(const std::string& grid, const std::vector<Sample>& samples, bool partial_tail) {
  std::string s = samples_csv_preamble({{"grid", grid}}, CsvReporter::extra_columns());
  for (const auto& x : samples) s += samples_csv_row(x, CsvReporter::extra_columns());
  if (partial_tail) s += "allreduce,ONESHOT,NONE,bf16,2,1,cpu,,1,2";
  return s;
}
// Reads a sample file without recording it as an input of this process (read_samples_csv would, and the
// output-path rule would then refuse writing it, as it refuses an arfit command writing over its input).
SampleFile samples_in(const std::string& path) { return parse_samples_csv(arfit::testing::slurp(path), path); }
Sample sample(std::int64_t tokens) {
  Sample s;
  s.strategy = "ONESHOT";
  s.nranks = 2;
  s.tokens = tokens;
  s.hidden = 256;
  s.bytes = tokens * 512;
  s.time_us = 3;
  return s;
}
}  // namespace

// --resume without a journal starts one from a copy of the output's rows; the output itself is not touched
// (it is replaced only when the run ends).
TEST(BenchOutput, ResumeFromTheOutputCopiesItAndLeavesItUntouched) {
  TempDir d;
  const std::string written = file_with("G", {sample(1), sample(2)}, true);
  const std::string path = d.write("s.csv", written);
  OutputState st = inspect_output(path, "G", true, false);
  EXPECT_EQ(st.start, JournalStart::CopyOfOutput);
  EXPECT_EQ(st.journal, path + ".partial");
  EXPECT_EQ(st.finished.size(), 2u);
  EXPECT_TRUE(st.finished.count(sample_key(sample(2))));
  // The copy lacks the partial row and parses; the output keeps every byte; no journal yet.
  EXPECT_EQ(st.copied_output, written.substr(0, written.rfind('\n') + 1));
  EXPECT_EQ(parse_samples_csv(st.copied_output, path).samples.size(), 2u);
  EXPECT_EQ(arfit::testing::slurp(path), written);
  EXPECT_FALSE(std::filesystem::exists(st.journal));
}

// A journal (a killed run) is the newer state: --resume continues it, cutting its partial last row, and
// reads its finished cases, not the output's.
TEST(BenchOutput, ResumeContinuesTheJournalAndCutsItsPartialLine) {
  TempDir d;
  const std::string old_output = file_with("G", {sample(1)}, false);
  const std::string path = d.write("s.csv", old_output);
  const std::string journal = d.write("s.csv.partial", file_with("G", {sample(1), sample(2), sample(4)}, true));
  OutputState st = inspect_output(path, "G", true, false);
  EXPECT_EQ(st.start, JournalStart::Continue);
  EXPECT_TRUE(st.copied_output.empty());
  EXPECT_EQ(st.finished.size(), 3u);
  EXPECT_EQ(samples_in(journal).samples.size(), 3u);
  EXPECT_EQ(arfit::testing::slurp(journal).back(), '\n');
  EXPECT_EQ(arfit::testing::slurp(path), old_output);
  // A journal for another grid is refused by name, and keeps every byte.
  const std::string other = file_with("OTHER", {sample(1)}, true);
  d.write("s.csv.partial", other);
  try {
    inspect_output(path, "G", true, false);
    FAIL();
  } catch (const GridError& e) {
    EXPECT_EQ(e.option(), "--resume");
    EXPECT_NE(std::string(e.what()).find("s.csv.partial' was written for a different grid"), std::string::npos) << e.what();
  }
  EXPECT_EQ(arfit::testing::slurp(journal), other);
}

TEST(BenchOutput, ExistingFileNeedsResumeOrOverwrite) {
  TempDir d;
  const std::string path = d.write("s.csv", file_with("G", {sample(1)}, false));
  try {
    inspect_output(path, "G", false, false);
    FAIL();
  } catch (const GridError& e) {
    EXPECT_EQ(e.option(), "-o/--output");
  }
  EXPECT_FALSE(inspect_output(path, "G", false, true).resumed());  // --overwrite starts afresh
  try {
    inspect_output(path, "OTHER", true, false);
    FAIL();
  } catch (const GridError& e) {
    EXPECT_EQ(e.option(), "--resume");
    EXPECT_NE(std::string(e.what()).find("different grid"), std::string::npos);
  }
  EXPECT_FALSE(inspect_output(d.file("missing.csv"), "G", true, false).resumed());  // nothing to resume: fresh
}

// A journal alone (the run that would have created the output was killed) is refused like an existing
// output, naming the journal; --overwrite discards it (the reporter starts a fresh one).
TEST(BenchOutput, ExistingJournalNeedsResumeOrOverwrite) {
  TempDir d;
  const std::string path = d.file("s.csv");
  d.write("s.csv.partial", file_with("G", {sample(1)}, true));
  try {
    inspect_output(path, "G", false, false);
    FAIL();
  } catch (const GridError& e) {
    EXPECT_EQ(e.option(), "-o/--output");
    const std::string what = e.what();
    EXPECT_NE(what.find("'" + path + ".partial' exists"), std::string::npos) << what;
    EXPECT_NE(what.find("--resume"), std::string::npos) << what;
    EXPECT_NE(what.find("--overwrite"), std::string::npos) << what;
  }
  EXPECT_EQ(inspect_output(path, "G", false, true).start, JournalStart::Fresh);
  EXPECT_EQ(inspect_output(path, "G", true, false).start, JournalStart::Continue);
}

// A journal another run holds (CsvReporter locks it while it measures) is refused whatever the flags: a second run
// with --overwrite removed it under the first, whose 33 measured cases were lost when it failed at the end.
TEST(BenchOutput, JournalOfARunStillMeasuringIsRefused) {
  TempDir d;
  const std::string path = d.file("s.csv");
  d.write("s.csv.partial", file_with("G", {sample(1)}, false));
  const int fd = ::open((path + ".partial").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  const pid_t pid = ::fork();  // flock locks belong to the open file: another process holds this one
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::flock(fd, LOCK_EX);
    ::pause();
    std::_Exit(0);
  }
  ::close(fd);
  for (int i = 0; i < 200; ++i) {  // until the child holds the lock
    const int probe = ::open((path + ".partial").c_str(), O_RDONLY);
    const bool held = ::flock(probe, LOCK_EX | LOCK_NB) != 0;
    ::close(probe);
    if (held) break;
    ::usleep(10000);
  }
  for (const auto& [resume, overwrite] : {std::pair<bool, bool>{false, true}, {true, false}, {false, false}}) {
    try {
      inspect_output(path, "G", resume, overwrite);
      ADD_FAILURE() << "resume " << resume << " overwrite " << overwrite;
    } catch (const GridError& e) {
      EXPECT_NE(std::string(e.what()).find("is the journal of an arbench run still measuring"), std::string::npos) << e.what();
    }
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  EXPECT_EQ(inspect_output(path, "G", false, true).start, JournalStart::Fresh);  // the lock went with the run
}

// The journal is an output too (it becomes one by its final move): the output-path rule holds for it up front.
TEST(BenchOutput, TheJournalPathMustPassTheOutputRule) {
  TempDir d;
  const std::string path = d.file("s.csv");
  std::filesystem::create_directory(path + ".partial");
  EXPECT_THROW(inspect_output(path, "G", false, true), arfit::OutputPathError);
  EXPECT_THROW(inspect_output(path, "G", false, false), arfit::OutputPathError);
}

// The reporter streams rows into the journal; only finish() (the run ended) moves it over the output. A
// reporter that never finishes (a killed run) leaves the output byte-identical and its rows in the journal.
TEST(BenchOutput, CsvReporterReplacesTheOutputOnlyWhenTheRunEnds) {
  TempDir d;
  const std::string old_output = file_with("OLD", {sample(1)}, false);
  const std::string path = d.write("s.csv", old_output);
  auto record = [](std::int64_t tokens) {
    Record r;
    r.sample = sample(tokens);
    return r;
  };
  {
    CsvReporter killed(path, inspect_output(path, "G", false, true));  // --overwrite
    killed.start({{"grid", "G"}}, 2, 0);
    killed.report(record(1));
  }  // no finish(): the process died here
  EXPECT_EQ(arfit::testing::slurp(path), old_output);
  EXPECT_EQ(samples_in(path + ".partial").samples.size(), 1u);
  // --resume continues the journal; the end of the run moves it over the output.
  OutputState st = inspect_output(path, "G", true, false);
  ASSERT_EQ(st.start, JournalStart::Continue);
  CsvReporter resumed(path, st);
  resumed.start({{"grid", "G"}}, 2, 1);
  resumed.report(record(2));
  arfit::OutputSet outputs;
  resumed.finish(RunSummary{}, outputs);
  EXPECT_TRUE(std::filesystem::exists(path + ".partial")) << "moved before the run's outputs are committed";
  outputs.commit();
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
  SampleFile f = samples_in(path);
  ASSERT_EQ(f.samples.size(), 2u);
  EXPECT_EQ(f.samples[1].tokens, 2);
  EXPECT_EQ(f.meta.front(), (std::pair<std::string, std::string>{"grid", "G"}));
}

// -o and --json are one run's outputs, replaced together (Runner::finish: every reporter's finish, then the commit): a
// JSON that cannot be written leaves the old sample CSV as it was and the journal for --resume. The CSV used to be
// moved into place before the JSON was written.
TEST(BenchOutput, AJsonThatFailsToWriteLeavesTheOldOutputAndTheJournal) {
  TempDir d;
  const std::string old_output = file_with("OLD", {sample(1)}, false);
  const std::string path = d.write("s.csv", old_output);
  std::filesystem::create_directory(d.file("records"));
  CsvReporter csv(path, inspect_output(path, "G", false, true));  // --overwrite
  JsonReporter json(d.file("records/s.json"));
  Record r;
  r.sample = sample(2);
  for (Reporter* reporter : std::vector<Reporter*>{&csv, &json}) {
    reporter->start({{"grid", "G"}}, 1, 0);
    reporter->report(r);
  }
  std::filesystem::remove(d.file("records"));  // the JSON's folder is gone when the run ends
  {
    OutputSet outputs;
    csv.finish(RunSummary{}, outputs);
    EXPECT_THROW(json.finish(RunSummary{}, outputs), std::runtime_error);
  }  // the run failed: nothing committed
  EXPECT_EQ(arfit::testing::slurp(path), old_output);
  EXPECT_EQ(samples_in(path + ".partial").samples.size(), 1u);
  std::set<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(d.path())) left.insert(e.path().filename().string());
  EXPECT_EQ(left, (std::set<std::string>{"s.csv", "s.csv.partial"}));
}

TEST(BenchOutput, ResumeRefusesAnotherCudaGraphMode) {
  TempDir d;
  // A file without a cuda_graph header entry was measured with eager launches.
  const std::string path = d.write("s.csv", file_with("G", {sample(1)}, false));
  EXPECT_TRUE(inspect_output(path, "G", true, false, cuda_graph_header_value(0)).resumed());
  try {
    inspect_output(path, "G", true, false, cuda_graph_header_value(2));
    FAIL();
  } catch (const GridError& e) {
    EXPECT_EQ(e.option(), "-G/--cuda-graph");
    EXPECT_NE(std::string(e.what()).find("cuda_graph: off"), std::string::npos) << e.what();
  }
  // --overwrite starts afresh in any mode.
  EXPECT_FALSE(inspect_output(path, "G", false, true, cuda_graph_header_value(2)).resumed());
}

TEST(BenchOutput, RunHeaderRecordsTheCudaGraphMode) {
  auto header_of = [](int cuda_graph) {
    const RunHeader h = make_run_header(RunIdentity{}, DeviceInfo{}, GridSpec{}, PlannedGrid{}, "arbench", 1, 5, 20, 0,
                                        60, cuda_graph);
    return std::map<std::string, std::string>(h.begin(), h.end());
  };
  EXPECT_EQ(header_of(0)["cuda_graph"], "off");
  EXPECT_EQ(cuda_graph_header_value(1), "1 collective per replay");
  auto graph = header_of(4);
  EXPECT_EQ(graph["cuda_graph"], "4 collectives per replay");
  EXPECT_NE(graph["timing"].find("CUDA-graph replay"), std::string::npos) << graph["timing"];
  EXPECT_NE(graph["timing"].find("divided by 4"), std::string::npos) << graph["timing"];
  EXPECT_EQ(header_of(0)["timing"].find("graph"), std::string::npos);
}

// --resume kept any row the file held: an edited size, a duplicated row, another backend's row stayed in the
// output beside the case measured again (a sample of no planned case, a case twice). Now each row continued must
// be a planned case, once, of this backend: refused as bad data naming the file and line, the file untouched.
TEST(BenchOutput, ResumeRefusesRowsThatAreNotThisRunsCasesOnce) {
  TempDir d;
  const std::set<std::string> planned = {sample_key(sample(1)), sample_key(sample(2)), sample_key(sample(4))};
  auto with_backend = [](Sample s, const std::string& b) {
    s.backend = b;
    return s;
  };
  const Sample one = with_backend(sample(1), "arbench-host"), two = with_backend(sample(2), "arbench-host");
  const struct {
    std::vector<Sample> rows;
    std::string says;
  } cases[] = {{{one, with_backend(sample(3), "arbench-host")}, "not a case of this run's plan"},
               {{one, two, one}, "repeats line"},
               {{one, with_backend(sample(2), "arbench-nccl")}, "column 'backend'"}};
  for (const auto& c : cases) {
    const std::string journal_text = file_with("G", c.rows, false);
    const std::string path = d.file("s.csv");
    const std::string journal = d.write("s.csv.partial", journal_text);
    try {
      inspect_output(path, "G", true, false, "off", "", &planned, "arbench-host");
      ADD_FAILURE() << c.says << ": accepted";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("s.csv.partial:"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(c.says),
                std::string::npos)
          << e.what();
    }
    EXPECT_EQ(arfit::testing::slurp(journal), journal_text);
  }
  // The same rows, each once and planned, are continued.
  d.write("s.csv.partial", file_with("G", {one, two}, false));
  EXPECT_EQ(inspect_output(d.file("s.csv"), "G", true, false, "off", "", &planned, "arbench-host").finished.size(), 2u);
}

// --resume kept the first session's header (world_size, timing) over rows a session with another world (an
// explicit --tp plans the same grid on 2 and 3 ranks) or other -w/-n/--buffers measured: the header misdescribed
// them. Now both must match what the file records; a file without them (an older arbench) is not checked.
TEST(BenchOutput, ResumeRefusesAnotherWorldSizeOrTiming) {
  TempDir d;
  const auto header = [](int world, int warmup, int iters, int buffers) {
    return make_run_header(RunIdentity{}, DeviceInfo{}, GridSpec{}, PlannedGrid{}, "arbench", world, warmup, iters,
                           buffers, 60, 0);
  };
  const RunHeader two = header(2, 5, 20, 0);
  std::string file = samples_csv_preamble(two, CsvReporter::extra_columns());
  for (const Sample& s : {sample(1), sample(2)}) file += samples_csv_row(s, CsvReporter::extra_columns());
  const std::string path = d.write("s.csv", file);
  std::string grid;
  for (const auto& [k, v] : two)
    if (k == "grid") grid = v;
  const auto resume = [&](const RunHeader& run) { return inspect_output(path, grid, true, false, "off", "", nullptr, "", &run); };
  EXPECT_TRUE(resume(two).resumed());
  const auto refused = [&](const RunHeader& run, const std::string& option, const std::string& says) {
    try {
      resume(run);
      ADD_FAILURE() << "resumed: " << says;
    } catch (const GridError& e) {
      EXPECT_EQ(e.option(), option) << e.what();
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
    EXPECT_EQ(arfit::testing::slurp(path), file);  // untouched
  };
  refused(header(3, 5, 20, 0), "--resume", "measured by 2 ranks, this run has 3");
  // The default TP list follows the world: the grid differs too, and the world size is what to say.
  try {
    const RunHeader three = header(3, 5, 20, 0);
    inspect_output(path, grid + " on 3 ranks", true, false, "off", "", nullptr, "", &three);
    ADD_FAILURE() << "resumed another grid";
  } catch (const GridError& e) {
    EXPECT_NE(std::string(e.what()).find("measured by 2 ranks, this run has 3"), std::string::npos) << e.what();
  }
  refused(header(2, 5, 100, 0), "-w/-n/--buffers", "this run with 'warmup 5, 100 timed iterations");
  refused(header(2, 1, 20, 0), "-w/-n/--buffers", "this run with 'warmup 1, 20");
  refused(header(2, 5, 20, 4), "-w/-n/--buffers", "rotated (4)");
  // A file that records neither (written before they were compared) resumes.
  const std::string old = d.write("old.csv", file_with(grid, {sample(1)}, false));
  EXPECT_TRUE(inspect_output(old, grid, true, false, "off", "", nullptr, "", &two).resumed());
}
