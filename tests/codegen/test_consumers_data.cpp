// The consumer checks of test_consumers.cpp on models fitted to the public aiconfigurator tables of H100 and B200
// (newest NCCL, vLLM, SGLang and TensorRT-LLM file each; skipped when ../shared/data/public is absent).
#include <gtest/gtest.h>

#include <iostream>

#include "consumer_checks.h"
#include "fit/fit.h"
#include "fixtures.h"
#include "ingest/ingest.h"

using namespace arfit;
using namespace arfit::consumer_checks;
using codegen::Request;

namespace {

struct PublicSystem {
  std::string system;
  int sm;
};

const std::vector<PublicSystem>& public_systems() {
  static const std::vector<PublicSystem> s{{"h100_sxm", 90}, {"b200_sxm", 100}};
  return s;
}

// The models of one system, fitted once; nullptr when the data is absent.
const ModelSet* public_models(const std::string& system) {
  static std::map<std::string, std::unique_ptr<ModelSet>> cache;
  auto it = cache.find(system);
  if (it != cache.end()) return it->second.get();
  const auto files = fixtures::public_files(system, {"nccl_2.29.2_nccl_perf", "vllm_0.24.0_custom_allreduce_perf",
                                                     "sglang_0.5.14_custom_allreduce_perf", "trtllm_1.3.0rc20_custom_allreduce_perf"});
  std::unique_ptr<ModelSet> m;
  if (!files.empty()) {
    fit::FitOptions o;
    o.threads = 2;
    m = std::make_unique<ModelSet>(fit::fit_model_set(ingest::load_samples(files), o));
  }
  return (cache[system] = std::move(m)).get();
}

#define PUBLIC_MODELS(var, sys)                                                   \
  const ModelSet* var = public_models(sys);                                       \
  if (!var) GTEST_SKIP() << "public aiconfigurator tables of " << sys << " absent"

Request request(const PublicSystem& p) {
  Request r;
  r.sm = p.sm;
  return r;
}

}  // namespace

TEST(PublicConsumers, TrtllmRefusesUnnumberedStrategiesThenAgreesWithJsonWhenMapped) {
  for (const auto& p : public_systems()) {
    PUBLIC_MODELS(m, p.system);
    Request r = request(p);
    try {
      generate(*m, r, "trtllm");
      ADD_FAILURE() << p.system << ": the strategies TensorRT-LLM has no number for must be refused";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("vLLM_custom_graph"), std::string::npos) << e.what();
    }
    // vLLM's custom all-reduce for ONESHOT, SGLang's for TWOSHOT (a demonstration mapping), the rest left out.
    r.map = {"vLLM_custom_graph=ONESHOT", "SGLang_CustomAllReduce_graph=TWOSHOT", "vLLM_custom_eager=ignore",
             "SGLang_CustomAllReduce_eager=ignore", "TRTLLM=ignore"};
    const int checked = check_trtllm(*m, r);
    EXPECT_GT(checked, 1260 * 3);
    const auto j = generate_json(*m, r);
    std::cout << p.system << " trtllm: " << checked << " lookups agree; cells " << j["trtllm"]["cells"].dump() << "\n";
    // Only NONE is measured: the fused cells get the named fallback (TensorRT-LLM's SM90 NVFP4 rule, and its size
    // gate where every message of a cell is too large for its custom kernels).
    int fused = 0;
    for (const auto& c : j["cells"])
      if (c["fusion"] != "NONE") {
        ++fused;
        const std::string rule = c["trtllm"]["rule"];
        EXPECT_TRUE(rule == "fallback" || rule == "nvfp4-below-sm100" || rule == "engine-size-gate") << rule;
      }
    EXPECT_EQ(fused, 945);
    // TWOSHOT where a cell holds fewer tokens than GPUs would throw in TensorRT-LLM: the models' choice there is the
    // next fastest strategy it can run (the issue counted 41 such cells on H100, 42 on B200).
    EXPECT_GT(j["trtllm"]["cells"]["excluded-choices"].get<int>(), 30) << p.system;
  }
}

TEST(PublicConsumers, HeaderAgreesWithJson) {
  for (const auto& p : public_systems()) {
    PUBLIC_MODELS(m, p.system);
    EXPECT_GT(check_header(*m, request(p)), 1260 * 3) << p.system;
  }
}

TEST(PublicConsumers, TunerIsRefusedWithoutNcclVariants) {
  for (const auto& p : public_systems()) {
    PUBLIC_MODELS(m, p.system);
    EXPECT_THROW(generate(*m, request(p), "nccl-tuner"), std::invalid_argument) << p.system;
  }
}

TEST(PublicConsumers, VllmSglangFlashinferFollowArfitOnEveryCell) {
  for (const auto& p : public_systems()) {
    PUBLIC_MODELS(m, p.system);
    const Request r = request(p);
    // vLLM runs torch symmetric memory above its bound, which the public tables do not hold: refused, naming it.
    try {
      generate(*m, r, "vllm");
      ADD_FAILURE() << p.system << ": vllm without a symmetric-memory model was not refused";
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find("--map NAME=symm_mem"), std::string::npos) << e.what();
    }
    // TensorRT-LLM's all-reduce stands in for symmetric memory (a demonstration mapping).
    Request vr = r;
    vr.map = {"TRTLLM=symm_mem"};
    const int vllm = check_vllm(*m, vr, "vLLM_custom_graph", "TRTLLM", "NCCL");
    const int sglang = check_sglang(*m, r, "SGLang_CustomAllReduce_graph", "SGLang_CustomAllReduce_eager", "NCCL");
    // FlashInfer's one-shot vs two-shot: the public tables have no such pair; vLLM's custom all-reduce stands in for
    // one-shot and TensorRT-LLM's all-reduce for two-shot (a demonstration mapping).
    Request fr = r;
    fr.map = {"vLLM_custom_graph=oneshot", "TRTLLM=twoshot"};
    const int flashinfer = check_flashinfer(*m, fr, "vLLM_custom_graph", "TRTLLM");
    EXPECT_GE(vllm, 3 * 15) << p.system;
    EXPECT_GE(sglang, 2 * 3 * 21) << p.system;
    EXPECT_GE(flashinfer, 3 * 21) << p.system;
    std::string summary;
    generate(*m, vr, "vllm", &summary);
    std::cout << p.system << " vllm: " << summary << "\n";
    generate(*m, r, "sglang", &summary);
    std::cout << p.system << " sglang: " << summary << "\n";
    generate(*m, fr, "flashinfer", &summary);
    std::cout << p.system << " flashinfer: " << summary << "\n";
  }
}
