// The strategies issue 40 adds, as codegen's consumers see them (synthetic models naming them):
//  * TensorRT-LLM numbers LOWPRECISION 6 but runs it only as the AllReduce module's configured strategy (its buffers
//    are allocated only then), never from the lookup table: the trtllm table leaves it out and says so, the header
//    enumerates it with TensorRT-LLM's number, and it may not stand for an exact strategy through --map;
//  * vLLM's symmetric-memory path above its custom bound runs torch's multimem_all_reduce_ (the two-shot multimem):
//    MULTIMEM_TWOSHOT's curve stands for it, MULTIMEM_ONESHOT's never does.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "codegen/rules_trtllm.h"
#include "codegen/table.h"
#include "consumer_checks.h"
#include "fixtures.h"
#include "fit/fit.h"

using namespace arfit;
using namespace arfit::consumer_checks;
using codegen::Request;

namespace {

// fx_lowprec: NCCL, ONESHOT and a LOWPRECISION that is fastest everywhere (TensorRT-LLM's axes, NONE).
// fx_multimem: NCCL, vLLM_custom_graph, MULTIMEM_ONESHOT (fastest above 64 KiB) and MULTIMEM_TWOSHOT, by bytes.
const ModelSet& models() {
  static const ModelSet set = [] {
    std::vector<Sample> v;
    for (int tp : {2, 4, 8})
      for (const char* s : {"NCCL", "ONESHOT", "LOWPRECISION"})
        for (std::int64_t tok = 1; tok <= 16384; tok *= 4)
          for (std::int64_t h : {128, 1024, 8192}) {
            const double b = double(tok * h * 2);
            const double t = std::string(s) == "NCCL" ? 15 + b / 2e5 : std::string(s) == "ONESHOT" ? 3 + tp * b / 5e4 : 1 + b / 1e6;
            Sample x = fixtures::make("fx_lowprec", s, tp, t * (1 + 0.01 * std::sin(double(tok * h))));
            x.tokens = tok;
            x.hidden = h;
            x.bytes = tok * h * 2;
            v.push_back(x);
          }
    for (int tp : {2, 4, 8})
      for (const char* s : {"NCCL", "vLLM_custom_graph", "MULTIMEM_ONESHOT", "MULTIMEM_TWOSHOT"})
        for (int k = 6; k <= 30; ++k) {
          const double b = double(std::int64_t{1} << k);
          const std::string n = s;
          const double t = n == "NCCL" ? 15 + 2 * b / 4e5
                           : n == "vLLM_custom_graph" ? 3 + tp * b / 1e5
                           : n == "MULTIMEM_ONESHOT" ? 2 + b / 4e5
                                                     : 6 + b / 3e5;
          Sample x = fixtures::make("fx_multimem", s, tp, t * (1 + 0.01 * std::sin(1.7 * k)));
          x.bytes = std::int64_t{1} << k;
          v.push_back(x);
        }
    fit::FitOptions o;
    o.threads = 2;
    return fit::fit_model_set(v, o);
  }();
  return set;
}

}  // namespace

TEST(NewStrategies, LowPrecisionHasTensorRtLlmsNumberButNeverATableCell) {
  EXPECT_EQ(codegen::trtllm_strategy_number("LOWPRECISION"), 6);
  EXPECT_EQ(codegen::trtllm_strategy_name(6), "LOWPRECISION");
  EXPECT_FALSE(codegen::trtllm_table_value_runs(6));
  Request r = fixture("fx_lowprec");
  const json j = generate_json(models(), r);
  EXPECT_EQ(j["trtllm"]["not_from_table"], std::vector<std::string>{"LOWPRECISION"});
  int model_cells = 0;
  for (const auto& c : j["cells"]) {
    EXPECT_NE(c["trtllm_code"], 6) << c.dump();
    model_cells += c["trtllm"]["rule"] == "model";
    // arfit's own choice may be LOWPRECISION (fastest); TensorRT-LLM's code is then the next one it can run.
    if (c["choice"] == "LOWPRECISION" && c["trtllm"]["rule"] == "model") {
      EXPECT_TRUE(c["trtllm"]["strategy"] == "ONESHOT" || c["trtllm"]["strategy"] == "NCCL") << c.dump();
    }
  }
  EXPECT_GT(model_cells, 0);
  const std::string table = generate(models(), r, "trtllm");
  EXPECT_NE(table.find("Left out: LOWPRECISION"), std::string::npos);
  // The header keeps arfit's choice and numbers it as TensorRT-LLM does.
  const std::string header = generate(models(), r, "header");
  EXPECT_NE(header.find("LOWPRECISION = 6"), std::string::npos) << header.substr(0, 3000);
  // A lossy strategy cannot stand for an exact one.
  r.map = {"LOWPRECISION=ONESHOT"};
  const std::string why = message_of<std::invalid_argument>([&] { generate(models(), r, "trtllm"); });
  EXPECT_EQ(why.rfind("--map: LOWPRECISION", 0), 0u) << why;
  r.map = {"LOWPRECISION=ignore"};
  EXPECT_TRUE(generate_json(models(), r)["trtllm"]["not_from_table"].empty());
}

TEST(NewStrategies, VllmsSymmetricMemoryBandIsTheMultimemTwoShotCurve) {
  const std::string file = generate(models(), fixture("fx_multimem"), "vllm");
  EXPECT_NE(file.find("symm_mem = MULTIMEM_TWOSHOT"), std::string::npos) << file.substr(0, 2000);
  EXPECT_EQ(file.find("MULTIMEM_ONESHOT"), std::string::npos) << file.substr(0, 2000);
}
