// `arfit fit`, `arfit predict`, `arfit eval` end to end on a synthetic arfit sample CSV.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <regex>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/bus_factor.h"
#include "io/sample_csv_file.h"
#include "model/sample_csv.h"
#include "model/text.h"
#include "test_support.h"

using namespace arfit;
using arfit::testing::run_command;
using arfit::testing::TempDir;

namespace {

// Two strategies at 2, 4 and 8 ranks, α-β with a 2 % wiggle, 1 KiB .. 256 MiB.
std::string write_samples(const TempDir& dir, const std::string& dtype = "bf16") {
  SampleFile f;
  std::mt19937 rng(1);
  std::normal_distribution<double> nd(0, 0.01);
  for (const std::string strategy : {"NCCL", "ONESHOT"})
    for (int n : {2, 4, 8})
      for (int e = 10; e <= 28; ++e) {
        Sample s;
        s.collective = Collective::AllReduce;
        s.strategy = strategy;
        s.nranks = n;
        s.sm = 90;
        s.bytes = std::int64_t{1} << e;
        s.dtype = dtype;
        const double alpha = strategy == "NCCL" ? 10.0 + n : 4.0 + 0.5 * n;
        const double beta = strategy == "NCCL" ? 300.0 : 60.0;
        s.time_us = (alpha + bus_factor(s.collective, n) * s.bytes / (beta * 1e3)) * std::exp(nd(rng));
        s.source = "synthetic";
        s.extra["system"] = "testbox";
        f.samples.push_back(s);
      }
  const std::string path = dir.file("samples.csv");
  write_samples_csv(path, f);
  return path;
}

}  // namespace

// Without --dtype, tokens × hidden are sized by the group's dtype (fp32 here: 4 bytes), and the printed bytes and
// bus bandwidth are those of the size the model answered for.
TEST(FitCli, PredictTokensSizedByTheGroupsDtype) {
  TempDir dir;
  const std::string models = dir.file("models.json");
  auto r = run_command(arfit::testing::arfit_bin() + " fit " + write_samples(dir, "fp32") + " -o " + models);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  r = run_command(arfit::testing::arfit_bin() + " predict " + models +
                  " --collective allreduce --strategy NCCL --nranks 8 --tokens 64 --hidden 4096 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto p = nlohmann::json::parse(r.output);
  ASSERT_EQ(p.size(), 1u);
  EXPECT_DOUBLE_EQ(p[0]["bytes"].get<double>(), 64.0 * 4096 * 4);
  EXPECT_NEAR(p[0]["busbw_gbps"].get<double>(),
              bus_bw_gbps(Collective::AllReduce, 8, 64.0 * 4096 * 4, p[0]["time_us"].get<double>()), 1e-9);
  // The same size asked in bytes is the same answer.
  r = run_command(arfit::testing::arfit_bin() + " predict " + models +
                  " --collective allreduce --strategy NCCL --nranks 8 --bytes 1048576 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_DOUBLE_EQ(nlohmann::json::parse(r.output)[0]["time_us"].get<double>(), p[0]["time_us"].get<double>());
}

// Sizes above 1e18 bytes (kMaxSampleBytes: no model holds them) are usage errors naming the option and the bound,
// in a list, at a range's end, as tokens x hidden x the --dtype's size and as an all-to-allv split's mean per rank,
// in one message shape (model/sample.h byte_bound_problem, as codegen's grid); 1e18 itself is a size predict asks.
TEST(FitCli, PredictRefusesSizesAboveTheLargestModelled) {
  TempDir dir;
  const std::string models = dir.file("models.json");
  auto r = run_command(arfit::testing::arfit_bin() + " fit " + write_samples(dir) + " -o " + models);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string predict = arfit::testing::arfit_bin() + " predict " + models + " --collective allreduce --nranks 8 ";
  for (const auto& [args, says] : std::vector<std::pair<std::string, std::string>>{
           {"--bytes 2e18", "--bytes: size '2e18' is 2e+18 bytes, above 1e+18, the largest size arfit models"},
           {"--bytes 1K,1e19", "--bytes: size '1e19' is 1e+19 bytes, above 1e+18"},
           {"--bytes 1K:4e18:1024", "--bytes: range end '4e18' is 4e+18 bytes, above 1e+18"},
           {"--tokens 4503599627370496 --hidden 4503599627370496",
            // Sized as the file's one type (bf16), the type that answers (it was sized at one byte an element).
            "--tokens x --hidden: 4503599627370496 x 4503599627370496 x bf16 is 4.06e+31 bytes, above 1e+18"},
           {"--tokens 1073741824 --hidden 1073741824 --dtype fp32",
            "--tokens x --hidden: 1073741824 x 1073741824 x fp32 is 4.61e+18 bytes, above 1e+18"}}) {
    r = run_command(predict + args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
    EXPECT_NE(r.output.find(says), std::string::npos) << args << ": " << r.output;
  }
  // All-to-allv: what a rank sends on average (a 2-rank matrix of 1e18 bytes to each peer and itself).
  r = run_command(arfit::testing::arfit_bin() + " predict " + models + " --collective alltoallv --nranks 2 --splits 1e18-1e18/1e18-1e18");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--splits: what a rank of '1e18-1e18/1e18-1e18' sends on average is 2e+18 bytes, above 1e+18"),
            std::string::npos)
      << r.output;
  // 2^30 x 2^29 x 1 byte (5.8e17) is within the bound: no usage error (the model answers or says it cannot).
  r = run_command(predict + "--tokens 1073741824 --hidden 536870912 --dtype fp8");
  EXPECT_NE(r.exit_code, 2) << r.output;
}

// eval on one machine: crosshw says it needs two systems and names the one it found (not the 12-size rule, which
// every curve here meets); the ceiling from other machines is a '-' row with a note on stderr, not auto's errors.
TEST(FitCli, EvalSaysWhyOneMachineHasNothingToCompare) {
  TempDir dir;
  const std::string samples = write_samples(dir);
  auto r = run_command(arfit::testing::arfit_bin() + " eval " + samples + " --protocol crosshw:3");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("it needs curves of at least two systems"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("the inputs hold one, 'testbox' (6 curves)"), std::string::npos) << r.output;
  EXPECT_EQ(r.output.find("12 distinct sizes"), std::string::npos) << r.output;
  const std::string ej = dir.file("eval.json");
  r = run_command(arfit::testing::arfit_bin() + " eval " + samples +
                  " --protocol interp2 --methods auto,ceiling-otherhw --json " + ej);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("note: ceiling-otherhw: no held-out point has 3 or more other machines' curves"), std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("(the inputs hold 1 machine: testbox)"), std::string::npos) << r.output;
  const std::regex dash_row("\\nceiling-otherhw +- +- +- +- +0 +0 +-\\n");
  EXPECT_TRUE(std::regex_search(r.output, dash_row)) << r.output;
  const auto e = nlohmann::json::parse(arfit::testing::slurp(ej));
  EXPECT_EQ(e["methods"]["ceiling-otherhw"]["points"], 0);
  EXPECT_EQ(e["methods"]["ceiling-otherhw"]["ceiling_points"], 0);
}

TEST(FitCli, FitPredictEval) {
  TempDir dir;
  const std::string samples = write_samples(dir);
  const std::string models = dir.file("models.json");
  auto r = run_command(arfit::testing::arfit_bin() + " fit " + samples + " -o " + models);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("fitted 6 groups"), std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(arfit::testing::slurp(models));
  EXPECT_EQ(j["schema"], "arfit-models");
  EXPECT_EQ(j["schema_version"], 1);
  EXPECT_EQ(j["inputs"][0]["path"], samples);
  EXPECT_EQ(j["inputs"][0]["fnv1a64"].get<std::string>().size(), 16u);
  EXPECT_EQ(j["groups"].size(), 6u);
  EXPECT_EQ(j["joint"].size(), 2u);

  // table
  r = run_command(arfit::testing::arfit_bin() + " predict " + models + " --collective allreduce --strategy NCCL --nranks 8 --bytes 1K:1M:4");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("busbw_GBps"), std::string::npos);
  // json, joint-n to 16 ranks, SM transfer
  r = run_command(arfit::testing::arfit_bin() + " predict " + models +
                  " --collective allreduce --strategy NCCL --nranks 16 --sm 100 --bytes 1M,64M --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto p = nlohmann::json::parse(r.output);
  ASSERT_EQ(p.size(), 2u);
  EXPECT_TRUE(p[0]["extrapolated"].get<bool>());
  EXPECT_NE(p[0]["how"].get<std::string>().find("joint-n"), std::string::npos);
  EXPECT_NE(p[0]["how"].get<std::string>().find("sm-transfer 90->100"), std::string::npos);
  EXPECT_LT(p[1]["lo_us"].get<double>(), p[1]["time_us"].get<double>());
  // tokens x hidden
  r = run_command(arfit::testing::arfit_bin() + " predict " + models +
                  " --collective allreduce --strategy ONESHOT --nranks 4 --tokens 1,64 --hidden 4096,8192 --dtype bf16 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(nlohmann::json::parse(r.output).size(), 4u);
  // usage errors exit 2
  r = run_command(arfit::testing::arfit_bin() + " predict " + models + " --collective allreduce --nranks 8");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  r = run_command(arfit::testing::arfit_bin() + " predict " + models + " --collective allreduce --bytes 1K --tokens 4 --hidden 8");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  // nothing answers: exit 1
  r = run_command(arfit::testing::arfit_bin() + " predict " + models + " --collective allgather --nranks 8 --bytes 1K");
  EXPECT_EQ(r.exit_code, 1) << r.output;

  // eval with JSON
  const std::string ej = dir.file("eval.json");
  r = run_command(arfit::testing::arfit_bin() + " eval " + samples + " --protocol interp2 --json " + ej);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto e = nlohmann::json::parse(arfit::testing::slurp(ej));
  EXPECT_EQ(e["protocol"], "interp2");
  for (const char* m : {"auto", "seed", "alphabeta", "loglog"}) {
    ASSERT_TRUE(e["methods"].contains(m)) << m;
    for (const char* k : {"gmae", "median", "p90", "max", "points", "groups"}) EXPECT_TRUE(e["methods"][m].contains(k)) << m << k;
    EXPECT_EQ(e["methods"][m]["groups"], 6);
  }
  // α-β data: auto is close to the noise, and far better than the seed
  EXPECT_LT(e["methods"]["auto"]["gmae"].get<double>(), 2.0);
  r = run_command(arfit::testing::arfit_bin() + " eval " + samples + " --protocol nope");
  EXPECT_EQ(r.exit_code, 2) << r.output;
}

// The fingerprint a models file records of each input is that of the bytes the fit read: an input is read once,
// so a FIFO (a pipe fed once) is fitted and its fingerprint is that of what came through it (the fingerprint
// used to be taken by reading the input again, which waited forever on the FIFO).
TEST(FitCli, InputsAreReadOnceAndFingerprintedAsRead) {
  TempDir dir;
  const std::string samples = write_samples(dir);
  const std::string fifo = dir.file("samples.fifo"), models = dir.file("models.json");
  ASSERT_EQ(run_command("mkfifo " + fifo).exit_code, 0);
  auto r = run_command("(cat " + samples + " > " + fifo + " &) ; timeout 60 " + arfit::testing::arfit_bin() + " fit " + fifo +
                       " -o " + models + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(arfit::testing::slurp(models));
  EXPECT_EQ(j["inputs"][0]["path"], fifo);
  EXPECT_EQ(j["inputs"][0]["fnv1a64"], fnv1a64_hex(arfit::testing::slurp(samples)));
}

TEST(FitCli, BadInputNamesTheFile) {
  TempDir dir;
  const std::string bad = dir.write("bad.csv", "#arfit-samples v1\ncollective,strategy,nranks,bytes,time_us\nallreduce,NCCL,8,abc,3\n");
  const std::string models = dir.file("m.json");
  auto r = run_command(arfit::testing::arfit_bin() + " fit " + bad + " -o " + models);
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("bad.csv"), std::string::npos) << r.output;
  EXPECT_FALSE(std::filesystem::exists(models));
  const std::string garbage = dir.write("m2.json", "{\"schema\": \"arfit-models\", \"schema_version\": 1}");
  r = run_command(arfit::testing::arfit_bin() + " predict " + garbage + " --collective allreduce --bytes 1K");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("m2.json"), std::string::npos) << r.output;
}

// A new machine from three sizes per curve: `arfit fit --prior` with another machine's samples (fitted on the
// fly) or its models file, the transferred groups marked and named in `predict`; crosshw's K must be given.
TEST(FitCli, FitWithPriorTransfersAQuickCalibration) {
  TempDir dir;
  const std::string prior = write_samples(dir);
  SampleFile target;
  std::mt19937 rng(2);
  std::normal_distribution<double> nd(0, 0.005);
  for (int n : {2, 4, 8})
    for (int e : {10, 19, 28}) {  // anchors:3 of 1 KiB .. 256 MiB
      Sample s;
      s.collective = Collective::AllReduce;
      s.strategy = "NCCL";
      s.nranks = n;
      s.sm = 100;
      s.bytes = std::int64_t{1} << e;
      s.time_us = 1.2 * (10.0 + n + bus_factor(s.collective, n) * s.bytes / 300e3) * std::exp(nd(rng));
      s.source = "calibration";
      s.extra["system"] = "newbox";
      target.samples.push_back(s);
    }
  const std::string target_path = dir.file("new.csv");
  write_samples_csv(target_path, target);
  const std::string models = dir.file("new.json");
  auto r = run_command(arfit::testing::arfit_bin() + " fit " + target_path + " --prior " + prior + " -o " + models);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("transfer K=3: testbox"), std::string::npos) << r.output;
  const auto j = nlohmann::json::parse(arfit::testing::slurp(models));
  EXPECT_EQ(j["priors"][0]["path"], prior);
  ASSERT_EQ(j["groups"].size(), 3u);
  for (const auto& g : j["groups"]) EXPECT_TRUE(g.contains("transfer")) << g["id"];
  r = run_command(arfit::testing::arfit_bin() + " predict " + models + " --collective allreduce --nranks 8 --bytes 1M");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("transfer K=3: testbox"), std::string::npos) << r.output;
  // predict --json and codegen's json mark what rests on transferred curves, at a measured count and at a count
  // the joint fit carries them to.
  for (const char* n : {"8", "16"}) {
    r = run_command(arfit::testing::arfit_bin() + " predict " + models + " --collective allreduce --nranks " + n + " --bytes 1M --json");
    ASSERT_EQ(r.exit_code, 0) << r.output;
    for (const auto& p : nlohmann::json::parse(r.output)) EXPECT_TRUE(p["transferred"].get<bool>()) << p.dump();
  }
  const std::string table = dir.file("table.json");
  r = run_command(arfit::testing::arfit_bin() + " codegen " + models + " --format json --tp 4,16 -o " + table);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("chosen from curves transferred from other machines"), std::string::npos) << r.output;
  const auto cells = nlohmann::json::parse(arfit::testing::slurp(table));
  EXPECT_EQ(cells["summary"]["transferred"], cells["summary"]["cells"].get<int>() - cells["summary"]["fallback"].get<int>());
  for (const auto& c : cells["cells"]) {
    if (!c["fallback"].get<bool>()) {
      EXPECT_TRUE(c["predicted"]["NCCL"]["transferred"].get<bool>()) << c.dump();
    }
  }
  // The trtllm table (NCCL on its 315 NONE cells, but for those above TensorRT-LLM's size gate, which are the
  // engine's) says so in its summary and its Cells line, with the same count.
  const std::string lookup = dir.file("table.inc");
  r = run_command(arfit::testing::arfit_bin() + " codegen " + models + " --format trtllm --sm 100 -o " + lookup);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch said, written;
  ASSERT_TRUE(std::regex_search(r.output, said, std::regex(", (\\d+) chosen from curves transferred from other machines;"))) << r.output;
  const std::string cells_line = std::regex_replace(arfit::testing::slurp(lookup), std::regex("\n//   "), " ");
  ASSERT_TRUE(std::regex_search(cells_line, written, std::regex("; chosen from curves transferred from other machines: (\\d+)\n")));
  EXPECT_EQ(said[1], written[1]);
  EXPECT_GT(std::stoi(said[1]), 300);
  EXPECT_LE(std::stoi(said[1]), 315);
  // The prior as a models file works the same; a missing prior is a usage error.
  const std::string prior_models = dir.file("prior.json");
  ASSERT_EQ(run_command(arfit::testing::arfit_bin() + " fit " + prior + " -o " + prior_models + " -q").exit_code, 0);
  r = run_command(arfit::testing::arfit_bin() + " fit " + target_path + " --prior " + prior_models + " -o " + models);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("transfer K=3: testbox"), std::string::npos) << r.output;
  EXPECT_EQ(run_command(arfit::testing::arfit_bin() + " fit " + target_path + " --prior " + dir.file("absent.json") +
                        " -o " + models).exit_code, 2);
  // A prior is another machine: the fit's own input, or a models file fitted from the same file (found by the
  // fingerprint its `inputs` record, whatever the path), would lend each curve its own sizes.
  r = run_command(arfit::testing::arfit_bin() + " fit " + target_path + " --prior " + target_path + " -o " + models);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("is also an input of this fit"), std::string::npos) << r.output;
  const std::string copy = dir.write("copy_of_prior.csv", arfit::testing::slurp(prior));
  r = run_command(arfit::testing::arfit_bin() + " fit " + copy + " --prior " + prior_models + " -o " + models);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("was fitted from " + prior + ", the same file as " + copy), std::string::npos) << r.output;
  EXPECT_EQ(run_command(arfit::testing::arfit_bin() + " eval " + prior + " --protocol crosshw").exit_code, 2);
  EXPECT_EQ(run_command(arfit::testing::arfit_bin() + " eval " + prior + " --protocol interp2:3").exit_code, 2);
}

// A machine measured at one GPU count on one node, asked for more GPUs on more nodes: nothing in the file can
// carry it there, and the error says what would (exit 1, the file named). `--prior` brings another machine that
// measured that count on one node and its network on two: its step, bridged through its network, answers, the
// same as with both machines in one models file.
TEST(FitCli, PredictAcrossNodesSaysWhatWouldNarrowItAndPriorMachinesLendIt) {
  TempDir dir;
  auto curve = [](const std::string& system, int sm, int nranks, int nnodes, double alpha_us, double busbw_bytes_per_us) {
    SampleFile f;
    for (int e = 10; e <= 28; ++e) {
      Sample s;
      s.collective = Collective::AllReduce;
      s.strategy = "NCCL";
      s.nranks = nranks;
      s.nnodes = nnodes;
      s.sm = sm;
      s.bytes = std::int64_t{1} << e;
      s.dtype = "bf16";
      s.time_us = alpha_us + bus_factor(s.collective, nranks) * s.bytes / busbw_bytes_per_us;
      s.source = system;
      s.device = "NVIDIA B200";
      s.extra["system"] = system;
      f.samples.push_back(s);
    }
    return f;
  };
  const SampleFile f = curve("b200box", 100, 8, 1, 12.0, 700e3);
  write_samples_csv(dir.file("s.csv"), f);
  const std::string models = dir.file("models.json");
  auto r = run_command(arfit::testing::arfit_bin() + " fit " + dir.file("s.csv") + " -o " + models);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // Alone, one count on one node: its bus bandwidth held across nodes, the interval an unknown network's, and a
  // note on what would narrow it.
  r = run_command(arfit::testing::arfit_bin() + " predict " + models + " --collective allreduce --nranks 32 --nnodes 4 --bytes 1M --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("note: no machine (in the models file or --prior) lent b200box a scale-out step to 32 GPUs on 4 nodes"),
            std::string::npos) << r.output;
  const auto alone = nlohmann::json::parse(r.output.substr(0, r.output.find("note:")));
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_NE(alone[0]["how"].get<std::string>().find("across nodes (no multi-node prior)"), std::string::npos) << alone.dump();
  EXPECT_GT(alone[0]["hi_us"].get<double>() / alone[0]["lo_us"].get<double>(), 100.0);  // NVLink 5 to a NIC: ln 18 each way
  // The same machine on its own node count answers; a query that is not across nodes keeps the general advice.
  r = run_command(arfit::testing::arfit_bin() + " predict " + models + " --collective allreduce --nranks 8 --bytes 1M");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  r = run_command(arfit::testing::arfit_bin() + " predict " + models + " --collective allgather --nranks 8 --bytes 1M");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("(check --system"), std::string::npos) << r.output;

  SampleFile lender = curve("b200cluster", 100, 8, 1, 11.0, 720e3);
  const SampleFile network = curve("b200cluster", 100, 16, 2, 30.0, 45e3);
  lender.samples.insert(lender.samples.end(), network.samples.begin(), network.samples.end());
  write_samples_csv(dir.file("lender.csv"), lender);
  const std::string query = " --collective allreduce --nranks 32 --nnodes 4 --bytes 1K,1M,256M --json";
  auto with_samples = run_command(arfit::testing::arfit_bin() + " predict " + models + query + " --prior " + dir.file("lender.csv"));
  ASSERT_EQ(with_samples.exit_code, 0) << with_samples.output;
  const auto answers = nlohmann::json::parse(with_samples.output);
  ASSERT_EQ(answers.size(), 3u);
  for (const auto& a : answers) {
    EXPECT_EQ(a["how"], "scale-out prior from 1 machine(s): b200cluster (bridged through their own networks); extrapolated across the topology") << a.dump();
    EXPECT_TRUE(a["extrapolated"].get<bool>());
  }
  EXPECT_LT(answers[1]["hi_us"].get<double>() / answers[1]["lo_us"].get<double>(),
            alone[0]["hi_us"].get<double>() / alone[0]["lo_us"].get<double>());
  // The cluster's two logs filed as two machines (a two-node log and a one-node log of the same GPU): paired,
  // they lend the same step.
  write_samples_csv(dir.file("node.csv"), curve("b200node", 100, 8, 1, 11.0, 720e3));
  write_samples_csv(dir.file("net.csv"), curve("b200net", 100, 16, 2, 30.0, 45e3));
  auto paired = run_command(arfit::testing::arfit_bin() + " predict " + models + query + " --prior " + dir.file("node.csv") +
                            " " + dir.file("net.csv"));
  ASSERT_EQ(paired.exit_code, 0) << paired.output;
  const auto paired_answers = nlohmann::json::parse(paired.output);
  ASSERT_EQ(paired_answers.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(paired_answers[i]["how"], "scale-out prior from 1 machine(s): b200net (bridged through their own networks) "
                                        "(paired with one-node machines of their GPU); extrapolated across the topology") << paired_answers[i].dump();
    EXPECT_NEAR(paired_answers[i]["time_us"].get<double>(), answers[i]["time_us"].get<double>(),
                1e-6 * answers[i]["time_us"].get<double>());
  }
  // The lender as a models file, and both machines in one models file, answer alike.
  const std::string lender_models = dir.file("lender.json"), both = dir.file("both.json");
  ASSERT_EQ(run_command(arfit::testing::arfit_bin() + " fit " + dir.file("lender.csv") + " -o " + lender_models + " -q").exit_code, 0);
  ASSERT_EQ(run_command(arfit::testing::arfit_bin() + " fit " + dir.file("s.csv") + " " + dir.file("lender.csv") + " -o " + both + " -q").exit_code, 0);
  auto with_models = run_command(arfit::testing::arfit_bin() + " predict " + models + query + " --prior " + lender_models);
  ASSERT_EQ(with_models.exit_code, 0) << with_models.output;
  auto together = run_command(arfit::testing::arfit_bin() + " predict " + both + query + " --system b200box");
  ASSERT_EQ(together.exit_code, 0) << together.output;
  EXPECT_EQ(nlohmann::json::parse(with_models.output), answers);
  EXPECT_EQ(nlohmann::json::parse(together.output), answers);
  // A prior lends steps only: it answers no query of its own machine through this models file (a --system the
  // models file does not hold is a usage error, whatever --prior holds).
  r = run_command(arfit::testing::arfit_bin() + " predict " + models + " --system b200cluster --collective allreduce "
                  "--nranks 16 --nnodes 2 --bytes 1M --prior " + lender_models);
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--system: 'b200cluster' is not in the models file (systems: b200box)"), std::string::npos) << r.output;
  EXPECT_EQ(run_command(arfit::testing::arfit_bin() + " predict " + models + query + " --prior " + dir.file("absent.json")).exit_code, 2);
  r = run_command(arfit::testing::arfit_bin() + " predict " + models + " --collective allreduce --nranks 2 --nnodes 4 --bytes 1M");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("--nnodes 4 is more nodes than --nranks 2 has GPUs"), std::string::npos) << r.output;
}
