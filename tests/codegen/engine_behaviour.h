// The generated engine files installed into the engines' own decision code -- pinned replicas of vLLM, SGLang and
// FlashInfer at named versions (tests/codegen/engines: fixtures/ and the engine_dispatch.py harness) -- and asked,
// size by size, what the engine then runs: never an exception or assertion where the engine would raise one,
// arfit's choice wherever the file claims the size, the engine's own rule (its caps, its other bands) where the file
// says the engine decides. Shared by the unit tests (fitted fixtures) and the data tests (public models).
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "consumers.h"
#include "test_support.h"

namespace arfit::engine_behaviour {

using nlohmann::json;

inline std::string engines_dir() { return std::string(ARFIT_SOURCE_DIR) + "/tests/codegen/engines"; }

// What the harness answers for `queries` with `generated` installed into fixture `fixture` (a folder of
// engines/fixtures), environment `env` (NAME=VALUE) set for the whole run; a null json without python3.
inline json run_engine(const std::string& fixture, const std::string& generated, const json& queries,
                       const std::vector<std::string>& env = {}) {
  if (consumers::python3().empty()) return json();
  testing::TempDir dir;
  dir.write("generated.py", generated);
  dir.write("queries.json", queries.dump());
  std::string command = consumers::python3() + " " + engines_dir() + "/engine_dispatch.py --fixture " + engines_dir() +
                        "/fixtures/" + fixture + " --generated " + dir.file("generated.py") + " --queries " +
                        dir.file("queries.json");
  for (const auto& e : env) command += " --env " + e;
  const auto r = testing::run_command(command + " 2>&1");
  EXPECT_EQ(r.exit_code, 0) << r.output.substr(0, 2000);
  if (r.exit_code != 0) return json();
  return json::parse(r.output);
}

inline std::vector<double> powers_of_two(double lo, double hi) {
  std::vector<double> v;
  for (double b = lo; b <= hi; b *= 2) v.push_back(b);
  return v;
}

// --------------------------------------------------------------------------------------------------------------
// FlashInfer: for every world size it runs, token counts 1 .. world size + 2 (the decode steps two-shot's assert
// fails on) and beyond, hidden sizes up to the largest one-shot launches: no error, and one-shot exactly where the
// file's threshold says. Returns the answers checked (0 without python3).
inline int check_flashinfer_runs(const std::string& file, const std::map<int, double>& threshold) {
  json queries = json::array();
  std::vector<bool> oneshot;
  for (int ws : {2, 4, 8, 16})
    for (const auto& [dtype, itemsize, max_hidden] : {std::tuple<const char*, int, long long>{"bfloat16", 2, 65536}, {"float32", 4, 32768}})
      for (long long hidden : {128LL, 4096LL, 7168LL, 8192LL, 16384LL, max_hidden})
        for (long long tokens = 1; tokens <= 20000; tokens = tokens <= ws + 2 ? tokens + 1 : tokens * 4) {
          queries.push_back({{"world_size", ws}, {"token_num", tokens}, {"hidden", hidden}, {"dtype", dtype}, {"use_oneshot", nullptr}});
          oneshot.push_back(static_cast<double>(tokens) * hidden * 2 * ws * itemsize / 1048576.0 <= threshold.at(ws));
        }
  const json run = run_engine("flashinfer-0.6.18", file, queries);
  if (run.is_null()) return 0;
  EXPECT_EQ(run["install"], "ok") << run["install_error"];
  int checked = 0, errors = 0;
  for (std::size_t i = 0; i < oneshot.size(); ++i) {
    const json& a = run["answers"][i];
    errors += a.contains("error");
    if (a.contains("error")) {
      ADD_FAILURE() << "FlashInfer raises " << a["error"] << " for " << queries[i].dump();
      continue;
    }
    // The heuristic's own downgrade above MAX_COMM_SIZE (two-shot) is FlashInfer's: it follows the threshold below.
    const bool downgraded = queries[i]["token_num"].get<double>() * queries[i]["hidden"].get<double>() * 2 *
                                queries[i]["world_size"].get<int>() * (queries[i]["dtype"] == "float32" ? 2 : 1) > 2145386496.0;
    if (!downgraded) {
      EXPECT_EQ(a["algo"], oneshot[i] ? "oneshot" : "twoshot") << queries[i].dump();
    }
    ++checked;
  }
  EXPECT_EQ(errors, 0);
  // FlashInfer before 0.5.0 has no dict: the file refuses to install there, naming the version.
  const json old = run_engine("flashinfer-0.4.1", file, json::array());
  if (!old.is_null()) {
    EXPECT_EQ(old["install"], "error");
    EXPECT_NE(old["install_error"].get<std::string>().find("0.4.1"), std::string::npos) << old["install_error"];
  }
  return checked;
}

// --------------------------------------------------------------------------------------------------------------
// vLLM: in each pinned version, every world size its custom all-reduce runs (2, 4, 6, 8), message sizes 256 B to 128
// MiB in bf16 with FlashInfer's all-reduce off (so that the custom bound decides; on, FlashInfer runs first): no
// error (before 0.33.0 a missing world size raises KeyError), the custom all-reduce exactly below min(the file's
// bound, 8 MiB), never custom above it. A version without symmetric memory on the capability never reads the table:
// the file refuses to install there, saying so; vLLM 0.33.0 has it on every capability arfit writes for.
inline int check_vllm_runs(const std::string& file, const std::string& capability, const std::map<int, double>& bound) {
  int checked = 0;
  for (const auto& [fixture, env] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"vllm-0.10.2", {"VLLM_ALLREDUCE_USE_SYMM_MEM=1"}}, {"vllm-0.11.0", {}}, {"vllm-0.33.0", {"VLLM_ALLREDUCE_USE_FLASHINFER=0"}}}) {
    json queries = json::array();
    std::vector<bool> custom;
    for (int ws : {2, 4, 6, 8})
      for (double b : powers_of_two(256, 128.0 * 1024 * 1024)) {
        queries.push_back({{"capability", capability}, {"world_size", ws}, {"nbytes", b}, {"dtype", "bfloat16"}});
        custom.push_back(b < std::min(bound.at(ws), 8.0 * 1024 * 1024));
      }
    const json run = run_engine(fixture, file, queries, env);
    if (run.is_null()) return 0;
    if (run["install"] == "error" && fixture != "vllm-0.33.0") {
      EXPECT_NE(run["install_error"].get<std::string>().find("runs no symmetric memory on compute capability " + capability),
                std::string::npos) << fixture << ": " << run["install_error"];
      continue;
    }
    EXPECT_EQ(run["install"], "ok") << fixture << ": " << run["install_error"];
    for (std::size_t i = 0; i < custom.size(); ++i) {
      const json& a = run["answers"][i];
      if (a.contains("error")) {
        ADD_FAILURE() << fixture << " raises " << a["error"] << " for " << queries[i].dump();
        continue;
      }
      EXPECT_EQ(a["path"] == "custom", custom[i]) << fixture << " " << queries[i].dump() << " -> " << a.dump();
      ++checked;
    }
  }
  return checked;
}

// --------------------------------------------------------------------------------------------------------------
// SGLang: in each configs snapshot (s1 .. s4), each context the file sets, the world sizes it lists, sizes from 256 B
// to 64 MiB and around the crossover, with and without multicast: no error, and some custom algorithm exactly while
// nbytes <= min(crossover, 16 MiB pull workspace) -- whatever band the snapshot tries first.
inline int check_sglang_runs(const std::string& file, int arch_major, const std::map<std::string, std::map<int, double>>& crossovers) {
  int checked = 0;
  for (const char* fixture : {"sglang-s1-0fbab45d", "sglang-s2-09e7d8ed", "sglang-s3-dict-configs", "sglang-s4-two-shot-push"}) {
    json queries = json::array();
    std::vector<bool> custom;
    for (const auto& [context, by_ws] : crossovers)
      for (const auto& [ws, x] : by_ws) {
        std::vector<double> sizes = powers_of_two(256, 64.0 * 1024 * 1024);
        const double at = std::floor(x / 16) * 16;  // custom all-reduce needs multiples of 16 bytes
        for (double b : {at, at + 16}) if (b > 0) sizes.push_back(b);
        for (bool multicast : {true, false})
          for (double b : sizes) {
            queries.push_back({{"arch", {arch_major, 0}}, {"world_size", ws}, {"nbytes", b}, {"context", context}, {"multicast", multicast}});
            custom.push_back(b <= std::min(x, 16.0 * 1024 * 1024));
          }
      }
    const json run = run_engine(fixture, file, queries);
    if (run.is_null()) return 0;
    EXPECT_EQ(run["install"], "ok") << fixture << ": " << run["install_error"];
    for (std::size_t i = 0; i < custom.size(); ++i) {
      const json& a = run["answers"][i];
      if (a.contains("error")) {
        ADD_FAILURE() << fixture << " raises " << a["error"] << " for " << queries[i].dump();
        continue;
      }
      EXPECT_EQ(a["algo"] != "nccl", custom[i]) << fixture << " " << queries[i].dump() << " -> " << a.dump();
      ++checked;
    }
  }
  return checked;
}

}  // namespace arfit::engine_behaviour
