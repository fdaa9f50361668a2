#include <gtest/gtest.h>

#include "model/errors.h"
#include "trace/json_locate.h"
#include "trace/vllm_profile.h"
#include "trace_test_util.h"

using namespace arfit::trace;
using arfit::InputError;

namespace {

// Parses `text` and returns the error message (fails the test when there is none).
std::string error_of(const std::string& text, const std::string& name = "bad.json") {
  try {
    parse_vllm_profile(text, name);
  } catch (const InputError& e) {
    return e.what();
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return "";
}

const char* kContext = R"("context": {"model": "m", "batch_size": 2, "prompt_len": 16, "output_len": 2, "tensor_parallel_size": 4})";

}  // namespace

TEST(VllmReader, ReadsContextPhasesAndNesting) {
  Profile p = read_vllm_profile(trace_data("vllm_tp2_small.json"));
  EXPECT_EQ(p.format, "vllm-layerwise");
  EXPECT_EQ(p.context.model, "example/tiny-llama-2layer");  // from engine_args
  EXPECT_EQ(p.context.tensor_parallel_size, 2);
  EXPECT_EQ(p.context.batch_size, 4);
  EXPECT_EQ(p.context.prompt_len, 128);
  ASSERT_EQ(p.phases.size(), 3u);
  EXPECT_EQ(p.phases[0].name, "prefill");
  EXPECT_EQ(p.phases[0].kind, PhaseKind::Prefill);
  EXPECT_EQ(p.phases[0].tokens, 4 * 128);
  EXPECT_EQ(p.phases[1].name, "decode_1");
  EXPECT_EQ(p.phases[1].step, 1);
  EXPECT_EQ(p.phases[1].tokens, 4);
  EXPECT_EQ(p.phases[2].step, 2);
  // Nesting: LlamaForCausalLM > LlamaDecoderLayer > LlamaAttention > QKVParallelLinear > gemm kernel.
  const ProfileNode& root = p.phases[0].roots.at(0);
  EXPECT_EQ(root.name, "LlamaForCausalLM");
  const ProfileNode& layer = root.children.at(1);
  EXPECT_EQ(layer.name, "LlamaDecoderLayer");
  EXPECT_EQ(layer.invocations, 2);
  EXPECT_DOUBLE_EQ(layer.cuda_time_us, 630.0);
  const ProfileNode& gemm = layer.children.at(1).children.at(0).children.at(0);
  EXPECT_NE(gemm.name.find("sm90_xmma_gemm"), std::string::npos);
  EXPECT_TRUE(gemm.children.empty());
  // Recorded shape on decode_2's all-reduce.
  const ProfileNode& ar = p.phases[2].roots[0].children[0].children[1].children[0].children[1];
  EXPECT_EQ(ar.shape_tokens, 4);
  EXPECT_EQ(ar.shape_hidden, 2048);
  EXPECT_EQ(ar.dtype, "bf16");
}

TEST(VllmReader, DecodeStepsAreOrderedNumerically) {
  std::string text = std::string("{") + kContext + R"(, "decode_10": {"summary_stats": []}, "prefill": {"summary_stats": []},
    "decode_2": {"summary_stats": []}, "decode_1": {"summary_stats": []}})";
  Profile p = parse_vllm_profile(text, "x.json");
  ASSERT_EQ(p.phases.size(), 4u);
  EXPECT_EQ(p.phases[1].name, "decode_1");
  EXPECT_EQ(p.phases[2].name, "decode_2");
  EXPECT_EQ(p.phases[3].name, "decode_10");
  EXPECT_EQ(p.context.tensor_parallel_size, 4);
}

TEST(VllmReader, MissingContextIsAnError) {
  std::string msg = error_of(R"({"prefill": {"summary_stats": []}})", "noctx.json");
  EXPECT_NE(msg.find("noctx.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'context'"), std::string::npos) << msg;
}

TEST(VllmReader, NoPrefillStepIsAnError) {
  std::string msg = error_of(std::string("{") + kContext + R"(, "decode_1": {"summary_stats": []}})");
  EXPECT_NE(msg.find("no prefill step"), std::string::npos) << msg;
  EXPECT_NE(msg.find("bad.json"), std::string::npos) << msg;
}

TEST(VllmReader, NonNumericTimeNamesPathAndLine) {
  std::string text = std::string("{") + kContext + R"(,
"prefill": {"summary_stats": [
  {"entry": {"name": "Layer", "cuda_time_us": 3.0, "invocations": 1}, "children": [
    {"entry": {"name": "k1", "cuda_time_us": 1.0, "invocations": 1}, "children": []},
    {"entry": {"name": "k2",
               "cuda_time_us": "2.0", "invocations": 1}, "children": []}
  ]}
]}})";
  std::string msg = error_of(text, "nonnum.json");
  EXPECT_NE(msg.find("nonnum.json:6:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("prefill.summary_stats[0].children[1].entry.cuda_time_us"), std::string::npos) << msg;
  EXPECT_NE(msg.find("must be a number"), std::string::npos) << msg;
}

TEST(VllmReader, NonNumericContextField) {
  std::string msg = error_of(R"({"context": {"batch_size": "four"}, "prefill": {"summary_stats": []}})");
  EXPECT_NE(msg.find("context.batch_size"), std::string::npos) << msg;
}

TEST(VllmReader, MissingEntryFieldsAndWrongTypes) {
  std::string base = std::string("{") + kContext + R"(, "prefill": {"summary_stats": [)";
  EXPECT_NE(error_of(base + R"({"children": []}]}})").find("missing field 'entry'"), std::string::npos);
  EXPECT_NE(error_of(base + R"({"entry": {"cuda_time_us": 1}}]}})").find("missing field 'name'"), std::string::npos);
  EXPECT_NE(error_of(base + R"({"entry": {"name": "k"}}]}})").find("missing field 'cuda_time_us'"), std::string::npos);
  EXPECT_NE(error_of(base + R"({"entry": {"name": "k", "cuda_time_us": -1}}]}})").find("negative"), std::string::npos);
  EXPECT_NE(error_of(base + R"({"entry": {"name": "k", "cuda_time_us": 1, "invocations": 1.5}}]}})").find("integer"),
            std::string::npos);
  EXPECT_NE(error_of(base + R"({"entry": {"name": "k", "cuda_time_us": 1}, "children": {}}]}})").find("'children' must be an array"),
            std::string::npos);
  EXPECT_NE(error_of(std::string("{") + kContext + R"(, "prefill": {"metadata": {}}})").find("no 'summary_stats'"),
            std::string::npos);
}

TEST(VllmReader, CyclicTreeIsAnError) {
  // A node that contains a copy of itself (what a self-referencing structure looks like once written out).
  std::string text = std::string("{") + kContext + R"(, "prefill": {"summary_stats": [
    {"entry": {"name": "Loop", "cuda_time_us": 5.0, "invocations": 1}, "children": [
      {"entry": {"name": "Loop", "cuda_time_us": 5.0, "invocations": 1}, "children": [
        {"entry": {"name": "k", "cuda_time_us": 5.0, "invocations": 1}, "children": []}]}]}]}})";
  std::string msg = error_of(text, "cyc.json");
  EXPECT_NE(msg.find("cyclic"), std::string::npos) << msg;
  EXPECT_NE(msg.find("prefill.summary_stats[0].children[0]"), std::string::npos) << msg;

  // Nesting beyond the depth limit.
  std::string deep;
  for (int i = 0; i < kMaxProfileDepth + 5; ++i)
    deep += R"({"entry": {"name": "n)" + std::to_string(i) + R"(", "cuda_time_us": 1}, "children": [)";
  deep += R"({"entry": {"name": "leaf", "cuda_time_us": 1}})";
  for (int i = 0; i < kMaxProfileDepth + 5; ++i) deep += "]}";
  msg = error_of(std::string("{") + kContext + R"(, "prefill": {"summary_stats": [)" + deep + "]}}");
  EXPECT_NE(msg.find("cyclic"), std::string::npos) << msg;
}

TEST(VllmReader, InvalidJsonNamesLine) {
  std::string msg = error_of("{\n \"context\": {},\n \"prefill\": {\"summary_stats\": [}\n}", "broken.json");
  EXPECT_NE(msg.find("broken.json:3:"), std::string::npos) << msg;
  EXPECT_NE(msg.find("invalid JSON"), std::string::npos) << msg;
}

TEST(JsonLocate, FindsLinesOfNestedValues) {
  std::string text = "{\n\"a\": [\n 1,\n {\"b\": \"x]y\",\n  \"c\": 2}\n]\n}";
  EXPECT_EQ(json_line_of(text, {std::string("a"), std::size_t{1}, std::string("c")}), 5);
  EXPECT_EQ(json_line_of(text, {std::string("a"), std::size_t{0}}), 3);
  EXPECT_EQ(json_line_of(text, {std::string("a"), std::size_t{1}, std::string("missing")}), 4);
  EXPECT_EQ(format_json_path({std::string("a"), std::size_t{1}, std::string("c")}), "a[1].c");
}

// Times beyond any profile's (10^13 us, 116 days) and message sizes beyond 10^18 bytes used to be read: two
// kernels of 1e308 us summed to inf, and breakdown and whatif wrote "inf" and "-nan" into their tables with
// exit 0. Now they are errors naming the line and the JSON path, as a negative value is.
TEST(VllmReader, TimesAndSizesBeyondAnyProfileAreErrors) {
  const std::string base = std::string("{") + kContext + R"(, "prefill": {"summary_stats": [)";
  std::string msg = error_of(base + R"({"entry": {"name": "k", "cuda_time_us": 1e308}}]}})", "huge.json");
  EXPECT_EQ(msg.rfind("huge.json:1: at prefill.summary_stats[0].entry.cuda_time_us:", 0), 0u) << msg;
  EXPECT_NE(msg.find("beyond 1e+13 us"), std::string::npos) << msg;
  msg = error_of(base + R"({"entry": {"name": "k", "cuda_time_us": 1, "bytes": 1e30}}]}})");
  EXPECT_NE(msg.find("entry.bytes: 'bytes' = 1e+30 is beyond 1e+18 bytes"), std::string::npos) << msg;
  msg = error_of(base + R"({"entry": {"name": "k", "cuda_time_us": 1, "bytes": -5}}]}})");
  EXPECT_NE(msg.find("entry.bytes: 'bytes' is negative"), std::string::npos) << msg;
  // At the bound itself the profile reads.
  const Profile p = parse_vllm_profile(base + R"({"entry": {"name": "k", "cuda_time_us": 1e13, "bytes": 1e18}}]}})", "ok.json");
  EXPECT_DOUBLE_EQ(p.phases.at(0).roots.at(0).cuda_time_us, 1e13);
}
