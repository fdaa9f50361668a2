// arfit's NCCL tuner plugin loaded and called as NCCL does (nccl_driver.h), through tuner API v3, v4, v5 and v6: it
// changes only the cost entries arfit has a model (or a rule) for, only those NCCL marked available, never writes
// past numAlgo x numProto, leaves the channel count as NCCL gave it, logs what it loaded through NCCL's logger, and
// with a missing or bad file logs a warning and changes nothing.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>

#include "model/model_set.h"
#include "nccl_driver.h"
#include "test_support.h"
#include "tuner/tuner_costs.h"

using arfit::nccl_driver::Communicator;
using arfit::nccl_driver::CostTable;
using arfit::nccl_driver::Plugin;
using arfit::nccl_driver::take_log;
using arfit::testing::arfit_bin;
using arfit::testing::run_command;
using arfit::testing::TempDir;

namespace {

// NCCL's forced algorithm/protocol variants of all-reduce on 2, 4, 8 ranks (one node) and 16 (two nodes), and of
// all-gather on 8 ranks: NCCL_RING_LL fastest for small messages, LL128 in between, TREE_SIMPLE, then RING_SIMPLE.
std::string variant_samples() {
  std::string s = "#arfit-samples v1\ncollective,strategy,fusion,dtype,nranks,nnodes,bytes,time_us\n";
  auto time = [](const std::string& v, int n, int nodes, double b) {
    const double hop = nodes > 1 ? 12.0 : 0.0;
    if (v == "NCCL_RING_LL") return 4.0 + hop + 0.5 * n + b / 2e3;
    if (v == "NCCL_RING_LL128") return 8.0 + hop + 0.5 * n + b / 1.2e4;
    if (v == "NCCL_TREE_SIMPLE") return 14.0 + 2 * hop + b / 2.5e4;
    return 20.0 + hop + n + b / 4e4;
  };
  for (const auto& [coll, n, nodes] : {std::tuple<const char*, int, int>{"allreduce", 2, 1}, {"allreduce", 4, 1}, {"allreduce", 8, 1},
                                       {"allreduce", 16, 2}, {"allgather", 8, 1}})
    for (const char* v : {"NCCL_RING_LL", "NCCL_RING_LL128", "NCCL_RING_SIMPLE", "NCCL_TREE_SIMPLE"})
      for (int k = 10; k <= 30; ++k)
        s += std::string(coll) + "," + v + ",NONE,fp32," + std::to_string(n) + "," + std::to_string(nodes) + "," +
             std::to_string(1LL << k) + "," + std::to_string(time(v, n, nodes, double(1LL << k)) * (1 + 0.01 * std::sin(1.3 * k))) + "\n";
  return s;
}

class TunerPlugin : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    files_ = new TempDir;
    files_->write("samples.csv", variant_samples());
    auto r = run_command(arfit_bin() + " fit " + files_->file("samples.csv") + " -q -o " + files_->file("models.json"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    r = run_command(arfit_bin() + " codegen " + files_->file("models.json") + " --format nccl-tuner --tp 8 -o " + files_->file("rules.conf"));
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() {
    delete files_;
    files_ = nullptr;
  }
  void SetUp() override {
    ASSERT_TRUE(plugin.loaded()) << Plugin::error();
    take_log();
  }
  void TearDown() override {
    unsetenv("ARFIT_TUNER_FILE");
    unsetenv("ARFIT_TUNER_SYSTEM");
  }
  static std::string file(const std::string& name) { return files_->file(name); }
  static void use(const std::string& path) { setenv("ARFIT_TUNER_FILE", path.c_str(), 1); }

  Plugin plugin{ARFIT_TUNER_PLUGIN};
  static TempDir* files_;
};
TempDir* TunerPlugin::files_ = nullptr;

const std::map<std::string, std::pair<int, int>> kModelled{{"NCCL_RING_LL", {NCCL_ALGO_RING, NCCL_PROTO_LL}},
                                                            {"NCCL_RING_LL128", {NCCL_ALGO_RING, NCCL_PROTO_LL128}},
                                                            {"NCCL_RING_SIMPLE", {NCCL_ALGO_RING, NCCL_PROTO_SIMPLE}},
                                                            {"NCCL_TREE_SIMPLE", {NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE}}};

bool modelled(int a, int p) {
  for (const auto& [name, ap] : kModelled)
    if (ap.first == a && ap.second == p) return true;
  return false;
}

std::string log_text() {
  std::string s;
  for (const auto& l : take_log()) s += std::to_string(l.level) + " " + l.text + "\n";
  return s;
}

}  // namespace

// Every API version: the modelled entries NCCL left available get the models' predicted times, every other entry
// keeps NCCL's cost (and -1 stays -1), nChannels stays 0, nothing past the table is written; NCCL then takes the
// variant the models predict fastest where every available entry is modelled.
TEST_F(TunerPlugin, ModelsSetCostsOnlyWhereModelledThroughEveryApiVersion) {
  use(file("models.json"));
  const arfit::ModelSet models = arfit::ModelSet::load(file("models.json"));
  for (int version : {3, 4, 5, 6}) {
    Communicator comm(plugin, version, 8, 1);
    ASSERT_TRUE(comm.found()) << version;
    ASSERT_EQ(comm.init_result(), ncclSuccess);
    EXPECT_STREQ(comm.name(), "arfit");
    EXPECT_TRUE(comm.leaves_chunk_size_to_nccl());
    const std::string log = log_text();
    EXPECT_NE(log.find("3 arfit tuner: loaded models file " + file("models.json")), std::string::npos) << log;
    for (int k = 10; k <= 30; k += 2) {
      const std::size_t bytes = std::size_t{1} << k;
      CostTable t(7, 3);
      t.ignore(NCCL_ALGO_COLLNET_DIRECT, NCCL_PROTO_SIMPLE);  // unavailable entries, one of them modelled
      t.ignore(NCCL_ALGO_RING, NCCL_PROTO_LL128);
      const CostTable before = t;
      int nchannels = -7;
      ASSERT_EQ(comm.coll_info(4, bytes, t, &nchannels), ncclSuccess);
      EXPECT_EQ(nchannels, 0) << "the channel count stays NCCL's";
      EXPECT_TRUE(t.canaries_intact());
      for (int a = 0; a < 7; ++a)
        for (int p = 0; p < 3; ++p) {
          if (!modelled(a, p) || before.at(a, p) < 0) {
            EXPECT_EQ(t.at(a, p), before.at(a, p)) << "v" << version << " algo " << a << " proto " << p;
            continue;
          }
          arfit::PredictQuery q;
          q.collective = arfit::Collective::AllReduce;
          q.nranks = 8;
          q.bytes = static_cast<double>(bytes);
          for (const auto& [name, ap] : kModelled)
            if (ap == std::make_pair(a, p)) q.strategy = name;
          const auto want = models.predict(q);
          ASSERT_TRUE(want);
          EXPECT_FLOAT_EQ(t.at(a, p), static_cast<float>(want->time_us)) << q.strategy << " " << bytes;
        }
    }
  }
}

TEST_F(TunerPlugin, NcclChoosesTheFastestModelledVariantWhereEveryAvailableEntryIsModelled) {
  use(file("models.json"));
  const arfit::ModelSet models = arfit::ModelSet::load(file("models.json"));
  Communicator comm(plugin, 6, 8, 1);
  int choices_seen = 0;
  std::pair<int, int> previous{-2, -2};
  for (int k = 10; k <= 30; ++k) {
    CostTable t(7, 3);
    for (int a = 0; a < 7; ++a)
      for (int p = 0; p < 3; ++p)
        if (!modelled(a, p)) t.ignore(a, p);
    int nchannels = 0;
    comm.coll_info(4, std::size_t{1} << k, t, &nchannels);
    std::string best;
    double best_t = 1e300;
    for (const auto& [name, ap] : kModelled) {
      arfit::PredictQuery q;
      q.nranks = 8;
      q.strategy = name;
      q.bytes = std::ldexp(1.0, k);
      const double time = models.predict(q)->time_us;
      if (time < best_t) best_t = time, best = name;
    }
    EXPECT_EQ(t.nccl_choice(), kModelled.at(best)) << (1LL << k) << " bytes";
    choices_seen += t.nccl_choice() != previous;
    previous = t.nccl_choice();
  }
  EXPECT_GE(choices_seen, 3) << "the sizes cross at least two crossovers";
}

// Calls the models say nothing about keep NCCL's costs: other collectives (every ncclFunc_t value), a communicator of
// a size and node count never measured, messages outside the measured sizes; and 6 algorithms (NCCL 2.22.3).
TEST_F(TunerPlugin, WhatTheModelsDoNotCoverIsLeftToNccl) {
  use(file("models.json"));
  Communicator comm(plugin, 4, 8, 1);
  for (int function = 0; function < 15; ++function) {
    if (function == 2 || function == 4) continue;
    CostTable t(7, 3);
    const CostTable before = t;
    int nchannels = 0;
    EXPECT_EQ(comm.coll_info(function, 1 << 20, t, &nchannels), ncclSuccess);
    EXPECT_EQ(t.cells, before.cells) << "function " << function;
    EXPECT_EQ(nchannels, 0);
  }
  // All-gather is modelled at 8 ranks too.
  CostTable ag(7, 3);
  const CostTable ag_before = ag;
  int nchannels = 0;
  comm.coll_info(2, 1 << 20, ag, &nchannels);
  EXPECT_NE(ag.at(NCCL_ALGO_RING, NCCL_PROTO_LL), ag_before.at(NCCL_ALGO_RING, NCCL_PROTO_LL));
  // Beyond the measured sizes (1 KiB .. 1 GiB): extrapolated, so NCCL's.
  for (std::size_t bytes : {std::size_t{8}, std::size_t{1} << 36}) {
    CostTable t(7, 3);
    const CostTable before = t;
    comm.coll_info(4, bytes, t, &nchannels);
    EXPECT_EQ(t.cells, before.cells) << bytes;
  }
  // 64 ranks on 8 nodes: never measured on 8 nodes.
  Communicator big(plugin, 6, 64, 8);
  CostTable t(7, 3);
  const CostTable before = t;
  big.coll_info(4, 1 << 20, t, &nchannels);
  EXPECT_EQ(t.cells, before.cells);
  // NCCL 2.22.3: 6 algorithms; the table is 6 x 3 and the plugin writes nothing past it.
  Communicator old(plugin, 3, 8, 1);
  CostTable six(6, 3);
  const CostTable six_before = six;
  old.coll_info(4, 1 << 20, six, &nchannels);
  EXPECT_TRUE(six.canaries_intact());
  EXPECT_NE(six.cells, six_before.cells);
}

// The rules file codegen writes (the example plugin's format): the first matching rule's entry becomes the cheapest,
// where NCCL marked it available; no 1-channel cap anywhere (channels 0 in arfit's rules; a call no rule matches keeps
// NCCL's table and count); a rule with channels > 0 hands NCCL that count.
TEST_F(TunerPlugin, RulesFileWithoutTheExamplePluginsChannelCap) {
  use(file("rules.conf"));
  Communicator comm(plugin, 5, 8, 1);
  EXPECT_NE(log_text().find("loaded rules file " + file("rules.conf") + ": 4 rule(s)"), std::string::npos);
  int chosen_ll = 0;
  for (int k = 3; k <= 32; ++k) {
    CostTable t(7, 3);
    int nchannels = 0;
    comm.coll_info(4, std::size_t{1} << k, t, &nchannels);
    EXPECT_EQ(nchannels, 0);
    const auto choice = t.nccl_choice();
    EXPECT_EQ(t.at(choice.first, choice.second), 0.0f) << "the matching rule's entry is the cheapest";
    chosen_ll += choice == std::make_pair(NCCL_ALGO_RING, NCCL_PROTO_LL);
  }
  EXPECT_GT(chosen_ll, 0);
  // Another collective, another communicator size: nothing matches, nothing changes, no channel cap.
  for (const auto& [function, ranks] : {std::pair<int, int>{2, 8}, {0, 8}, {4, 4}}) {
    Communicator other(plugin, 6, ranks, 1);
    CostTable t(7, 3);
    const CostTable before = t;
    int nchannels = 0;
    other.coll_info(function, 1 << 20, t, &nchannels);
    EXPECT_EQ(t.cells, before.cells);
    EXPECT_EQ(nchannels, 0);
  }
  // A rule's algorithm NCCL marked unavailable: NCCL decides, with its own channel count.
  TempDir dir;
  dir.write("four.conf", "allreduce,0,18446744073709551615,tree,simple,4,1,8\n");
  use(dir.file("four.conf"));
  Communicator four(plugin, 6, 8, 1);
  CostTable t(7, 3);
  int nchannels = 0;
  four.coll_info(4, 1 << 20, t, &nchannels);
  EXPECT_EQ(nchannels, 4);
  EXPECT_EQ(t.at(NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE), 0.0f);
  CostTable no_tree(7, 3);
  no_tree.ignore(NCCL_ALGO_TREE, NCCL_PROTO_SIMPLE);
  const CostTable before = no_tree;
  four.coll_info(4, 1 << 20, no_tree, &nchannels);
  EXPECT_EQ(no_tree.cells, before.cells);
  EXPECT_EQ(nchannels, 0);
}

// Missing and bad files, a system the file lacks: a WARN naming the file (and line), init still succeeds (an error
// would fail the communicator), and the plugin changes nothing.
TEST_F(TunerPlugin, MissingOrBadFilesAreLoggedAndChangeNothing) {
  TempDir dir;
  dir.write("bad.conf", "# arfit\nallreduce,0,100,ring,ll,0,1,8\nallreduce,0,100,warp,ll,0,1,8\n");
  dir.write("bad.json", "{\"groups\": [ {\"key\": 3} ]}\n");
  const std::vector<std::tuple<std::string, std::string, std::string>> cases{
      {"", "", "ARFIT_TUNER_FILE is not set"},
      {dir.file("none.conf"), "", dir.file("none.conf")},
      {dir.file("bad.conf"), "", dir.file("bad.conf") + ":3: column 'algorithm': 'warp' is not one of"},
      {dir.file("bad.json"), "", dir.file("bad.json")},
      {file("models.json"), "no_such_system", "--system"},
  };
  for (const auto& [path, system, needle] : cases) {
    if (path.empty()) unsetenv("ARFIT_TUNER_FILE");
    else use(path);
    if (!system.empty()) setenv("ARFIT_TUNER_SYSTEM", system.c_str(), 1);
    Communicator comm(plugin, 6, 8, 1);
    EXPECT_EQ(comm.init_result(), ncclSuccess) << path;
    const auto lines = take_log();
    ASSERT_FALSE(lines.empty()) << path;
    EXPECT_NE(lines.back().text.find(needle), std::string::npos) << lines.back().text;
    EXPECT_EQ(lines.back().level, path.empty() ? NCCL_LOG_INFO : NCCL_LOG_WARN) << lines.back().text;
    EXPECT_EQ(lines.back().flags, static_cast<unsigned long>(ARFIT_NCCL_INIT | ARFIT_NCCL_TUNING));
    CostTable t(7, 3);
    const CostTable before = t;
    int nchannels = 0;
    EXPECT_EQ(comm.coll_info(4, 1 << 20, t, &nchannels), ncclSuccess);
    EXPECT_EQ(t.cells, before.cells);
    EXPECT_EQ(nchannels, 0);
    unsetenv("ARFIT_TUNER_SYSTEM");
  }
}

// Communicators keep their own context: two at once, of different sizes and files, interleaved, then finalized.
TEST_F(TunerPlugin, CommunicatorsKeepTheirOwnContext) {
  use(file("models.json"));
  auto a = std::make_unique<Communicator>(plugin, 6, 8, 1);
  use(file("rules.conf"));
  auto b = std::make_unique<Communicator>(plugin, 6, 8, 1);
  unsetenv("ARFIT_TUNER_FILE");
  for (int i = 0; i < 3; ++i) {
    CostTable ta(7, 3), tb(7, 3);
    int n = 0;
    a->coll_info(4, 1 << 20, ta, &n);
    b->coll_info(4, 1 << 20, tb, &n);
    EXPECT_GT(ta.at(NCCL_ALGO_RING, NCCL_PROTO_LL), 0.0f) << "models: a predicted time";
    EXPECT_EQ(tb.at(tb.nccl_choice().first, tb.nccl_choice().second), 0.0f) << "rules: the rule's entry at 0";
  }
  a.reset();
  CostTable tb(7, 3);
  int n = 0;
  b->coll_info(4, 1 << 10, tb, &n);
  EXPECT_EQ(tb.at(NCCL_ALGO_RING, NCCL_PROTO_LL), 0.0f);
}

// NCCL dlopens the plugin RTLD_LOCAL: only the four tuner structs are exported, so the libraries linked into it
// cannot clash with the application's.
TEST_F(TunerPlugin, ExportsOnlyTheTunerSymbols) {
  const auto r = run_command("nm -D --defined-only " + std::string(ARFIT_TUNER_PLUGIN) + " 2>&1");
  if (r.exit_code == 127) GTEST_SKIP() << "nm is not installed";
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::string names;
  std::istringstream lines(r.output);
  for (std::string line; std::getline(lines, line);) names += line.substr(line.rfind(' ') + 1) + " ";
  EXPECT_EQ(names, "ncclTunerPlugin_v3 ncclTunerPlugin_v4 ncclTunerPlugin_v5 ncclTunerPlugin_v6 ");
}
