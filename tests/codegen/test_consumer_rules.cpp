// The consumers' rules around their lookups (codegen/rules_<consumer>.h) and the consumers' own files as the base of
// a generated one (--base): TensorRT-LLM's customAllReduceUtils.h read in its own layout and written in place, its
// own rules read from it; vLLM's and FlashInfer's dicts read from their Python; the versions each format knows.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "codegen/codegen.h"
#include "codegen/consumer_version.h"
#include "codegen/python_dict.h"
#include "codegen/rules_flashinfer.h"
#include "codegen/rules_nccl_tuner.h"
#include "codegen/rules_sglang.h"
#include "codegen/rules_trtllm.h"
#include "codegen/rules_vllm.h"
#include "codegen/trtllm_base.h"
#include "consumer_checks.h"
#include "fixtures.h"
#include "model/errors.h"
#include "trtllm_layout.h"

using namespace arfit;
using namespace arfit::consumer_checks;
using codegen::Request;

namespace {

std::string usage_error(const std::function<void()>& f) { return message_of<std::invalid_argument>(f); }
std::string input_error(const std::function<void()>& f) { return message_of<InputError>(f); }

const std::string kBaseName = "customAllReduceUtils.h";

}  // namespace

// ---------------------------------------------------------------------------------------------------------------
// TensorRT-LLM's file

TEST(TrtllmBase, ReadsTensorRtLlmsLayoutAndTheRulesTheFileStates) {
  for (auto era : {trtllm_layout::Era::Gate64MiB, trtllm_layout::Era::Gate16e6}) {
    const std::string text = trtllm_layout::file(era, trtllm_layout::typical_value);
    for (int sm : {90, 100}) {
      const codegen::TrtllmBase b = codegen::read_trtllm_base(text, kBaseName, sm);
      ASSERT_EQ(b.cells.size(), 1260u);
      std::size_t i = 0;
      for (int tp = 0; tp < 3; ++tp)
        for (int f = 0; f < 4; ++f)
          for (int h = 0; h < 7; ++h)
            for (int t = 0; t < 15; ++t, ++i) {
              ASSERT_EQ(b.cells[i].value, trtllm_layout::typical_value(sm, tp, f, h, t));
              ASSERT_EQ(text.substr(b.cells[i].offset, b.cells[i].length), std::to_string(b.cells[i].value));
            }
      ASSERT_TRUE(b.workspace_bytes && b.workspace_tp2_bytes && b.off_table_code);
      EXPECT_EQ(*b.workspace_tp2_bytes, era == trtllm_layout::Era::Gate64MiB ? 67108864.0 : 16e6);
      EXPECT_EQ(*b.workspace_bytes, era == trtllm_layout::Era::Gate64MiB ? 67108864.0 : 8e6);
      EXPECT_EQ(*b.off_table_code, era == trtllm_layout::Era::Gate64MiB ? 0 : 8);
      // Written back with its own values, the file is the same bytes, the banner aside.
      std::vector<int> codes;
      for (const auto& c : b.cells) codes.push_back(c.value);
      const std::string banner = "// arfit\n";
      const std::string same = codegen::patch_trtllm_base(b, codes, banner);
      EXPECT_EQ(same.substr(0, b.definition_line_offset) + same.substr(b.definition_line_offset + banner.size()), text);
      EXPECT_EQ(same.substr(b.definition_line_offset, banner.size()), banner);
    }
  }
}

TEST(TrtllmBase, BadTablesNameTheFileLineAndIndex) {
  const std::string good = trtllm_layout::file(trtllm_layout::Era::Gate64MiB, trtllm_layout::typical_value);
  const std::string table = "AllReduceBestStrategyTableSM90";
  // A row of 14 values.
  std::string short_row = good;
  const auto row = short_row.find("{4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,", short_row.find(table + "\n"));
  short_row.erase(row + 1, 3);
  std::string why = input_error([&] { codegen::read_trtllm_base(short_row, kBaseName, 90); });
  EXPECT_NE(why.find(kBaseName + ":"), std::string::npos) << why;
  EXPECT_NE(why.find("column '" + table + "[0][0][0]'"), std::string::npos) << why;
  EXPECT_NE(why.find("14 token columns where TensorRT-LLM's table has 15"), std::string::npos) << why;
  // A value no AllReduceStrategyType has.
  std::string nine = good;
  nine.replace(nine.find("{4,", nine.find(table + "\n")) + 1, 1, "9");
  why = input_error([&] { codegen::read_trtllm_base(nine, kBaseName, 90); });
  EXPECT_NE(why.find("9 is not an AllReduceStrategyType number"), std::string::npos) << why;
  EXPECT_NE(why.find(kBaseName + ":"), std::string::npos) << why;
  // No table of that SM; a table given twice.
  why = input_error([&] { codegen::read_trtllm_base("int x = 1;\n", kBaseName, 90); });
  EXPECT_NE(why.find("no definition of " + table), std::string::npos) << why;
  why = input_error([&] { codegen::read_trtllm_base(good + "\n" + trtllm_layout::table(90, trtllm_layout::typical_value), kBaseName, 90); });
  EXPECT_NE(why.find("defined more than once"), std::string::npos) << why;
  // Something else than integers: a name.
  std::string name = good;
  name.replace(name.find("{4,", name.find(table + "\n")) + 1, 1, "ONESHOT");
  why = input_error([&] { codegen::read_trtllm_base(name, kBaseName, 90); });
  EXPECT_NE(why.find("expected an AllReduceStrategyType number"), std::string::npos) << why;
  // Comments holding braces and numbers are not read as the table.
  std::string commented = good;
  commented.insert(commented.find("{// Fusion=NONE"), "/* {1, 2} */ // {3}\n");
  EXPECT_EQ(codegen::read_trtllm_base(commented, kBaseName, 90).cells.size(), 1260u);
}

// With --base, the cells no model decides keep the file's own values, byte for byte: fx_engines models NONE only
// (ONESHOT from vLLM's custom all-reduce and TensorRT-LLM's ONESHOT/TWOSHOT/NCCL), so every fused row is the file's.
TEST(TrtllmBase, CellsWithoutAModelKeepTheFilesBytes) {
  const std::string base = trtllm_layout::file(trtllm_layout::Era::Gate64MiB, trtllm_layout::typical_value);
  Request r = fixture("fx_engines");
  r.sm = 100;
  r.map = {"vLLM_custom_graph=ignore", "vLLM_symm_mem=ignore", "SGLang_CustomAllReduce_graph=ignore",
           "SGLang_CustomAllReduce_eager=ignore"};
  r.base_path = kBaseName;
  r.base_text = base;
  const std::string out = generate(fixtures::fitted(), r, "trtllm");
  const json j = generate_json(fixtures::fitted(), r);
  const codegen::TrtllmBase b = codegen::read_trtllm_base(base, kBaseName, 100);
  // out = the file up to the table, arfit's banner, the file from the table on with arfit's cells written in.
  ASSERT_EQ(out.compare(0, b.definition_line_offset, base, 0, b.definition_line_offset), 0);
  const std::size_t banner = out.size() - base.size();
  const std::string inserted = out.substr(b.definition_line_offset, banner);
  std::istringstream lines(inserted);
  for (std::string line; std::getline(lines, line);) EXPECT_EQ(line.rfind("//", 0), 0u) << line;
  EXPECT_NE(inserted.find("Input: " + kBaseName + " (fnv1a64 " + fnv1a64_hex(base) + ")"), std::string::npos);
  std::string expected = base;
  int model = 0, kept = 0;
  for (std::size_t i = 0; i < b.cells.size(); ++i) {
    const auto& c = j["cells"][i];
    const std::string rule = c["trtllm"]["rule"];
    if (rule == "model") {
      expected.replace(b.cells[i].offset, 1, std::to_string(c["trtllm_code"].get<int>()));
      ++model;
    } else {
      EXPECT_TRUE(rule == "base" || rule == "engine-size-gate") << rule;
      EXPECT_EQ(c["trtllm_code"], b.cells[i].value) << c.dump();
      if (rule == "base") {
        EXPECT_NE(c["fusion"], "NONE") << "NONE is modelled: " << c.dump();
      }
      ++kept;
    }
  }
  EXPECT_EQ(out.substr(b.definition_line_offset + banner), expected.substr(b.definition_line_offset));
  EXPECT_GT(model, 200);
  EXPECT_GE(kept, 945);
  EXPECT_EQ(j["trtllm"]["base"], kBaseName);
  // TensorRT-LLM's lookup reads it, and TensorRT-LLM runs it without throwing.
  EXPECT_GT(check_trtllm_runs(out, j, r.sm), 1000);
}

TEST(TrtllmBase, TheFilesRulesAreFollowedAndAContradictingVersionRefused) {
  const std::string old = trtllm_layout::file(trtllm_layout::Era::Gate16e6, trtllm_layout::typical_value);
  Request r = fixture("fx_trtllm");
  r.base_path = kBaseName;
  r.base_text = old;
  const json j = generate_json(fixtures::fitted(), r);
  EXPECT_NE(j["trtllm"]["consumer_version"].get<std::string>().find("005b299b"), std::string::npos) << j["trtllm"].dump();
  EXPECT_EQ(j["trtllm"]["rules_from"], kBaseName);
  EXPECT_EQ(j["trtllm"]["workspace_bytes"]["tp2"], 16e6);
  EXPECT_EQ(j["trtllm"]["workspace_bytes"]["above_tp2"], 8e6);
  EXPECT_EQ(j["trtllm"]["off_table_code"], 8);
  // The 8e6 gate takes more cells than the 64 MiB one.
  Request now = fixture("fx_trtllm");
  EXPECT_GT(j["trtllm"]["cells"]["engine-size-gate"].get<int>(),
            generate_json(fixtures::fitted(), now)["trtllm"]["cells"]["engine-size-gate"].get<int>());
  EXPECT_GT(check_trtllm_runs(generate(fixtures::fitted(), r, "trtllm"), j, r.sm), 1000);
  r.consumer_version = "10a94126";
  const std::string why = usage_error([&] { generate(fixtures::fitted(), r, "trtllm"); });
  EXPECT_EQ(why.rfind("--consumer-version 10a94126: the --base file " + kBaseName + " states workspace gate 16000000", 0), 0u) << why;
  r.consumer_version = "005b299";
  EXPECT_EQ(usage_error([&] { generate(fixtures::fitted(), r, "trtllm"); }), "");
}

// A --base value TensorRT-LLM would throw on (TWOSHOT with fewer tokens than GPUs) in a cell no model decides is not
// kept: NCCL is written, and the rule says why.
TEST(TrtllmBase, ABaseValueThatWouldThrowIsReplaced) {
  const std::string bad = trtllm_layout::file(trtllm_layout::Era::Gate64MiB, [](int sm, int tp, int f, int h, int t) {
    return f == 1 && tp == 2 && t == 0 ? 5 : trtllm_layout::typical_value(sm, tp, f, h, t);
  });
  Request r = fixture("fx_engines");
  r.sm = 100;
  r.map = {"vLLM_custom_graph=ignore", "vLLM_symm_mem=ignore", "SGLang_CustomAllReduce_graph=ignore",
           "SGLang_CustomAllReduce_eager=ignore"};
  r.base_path = kBaseName;
  r.base_text = bad;
  const json j = generate_json(fixtures::fitted(), r);
  int replaced = 0;
  for (const auto& c : j["cells"])
    if (c["trtllm"]["rule"] == "base-would-throw") {
      ++replaced;
      EXPECT_EQ(c["trtllm_code"], 0);
      EXPECT_EQ(c["tokens"], 1);
      EXPECT_EQ(c["tp"], 8);
    }
  EXPECT_EQ(replaced, 7);  // the seven hidden rows of TP 8, RESIDUAL_RMS_NORM, tokens 1
  EXPECT_GT(check_trtllm_runs(generate(fixtures::fitted(), r, "trtllm"), j, r.sm), 1000);
}

// The engine check itself fails on a table TensorRT-LLM would throw on.
TEST(TrtllmBase, TheEngineCheckCatchesAThrowingCell) {
  Request r = fixture("fx_trtllm");
  const json j = generate_json(fixtures::fitted(), r);
  std::string table = generate(fixtures::fitted(), r, "trtllm");
  // TP 8, NONE, hidden 128, tokens 1: TWOSHOT, the value the old table could hold.
  const std::size_t row = table.find("{", table.find("// TP=8"));
  table.replace(table.find("{", row + 1) + 1, 1, "5");
  EXPECT_NONFATAL_FAILURE(check_trtllm_runs(table, j, r.sm), "throws");
}

// ---------------------------------------------------------------------------------------------------------------
// The Python consumers' dicts

TEST(PythonDict, ReadsTheEnginesDictLiterals) {
  const std::string vllm = R"(KiB = 1024
MiB = 1024 * KiB  # a constant of a constant
CUSTOM_ALL_REDUCE_MAX_SIZES = {
    "9.0": {
        2: 64 * MiB,  # 64 MB
        4: 32 * MiB,
        6: MiB // 2,
        8: MiB // 4,
    },
    '10.0': {2: 2 * MiB, 4: 2_097_152, 6: (1 * MiB), 8: 1.0 * MiB},
}
)";
  const codegen::PyDict d = codegen::read_python_dict(vllm, "all_reduce_utils.py", "CUSTOM_ALL_REDUCE_MAX_SIZES");
  EXPECT_EQ(d.line, 3);
  EXPECT_EQ(d.dicts.at("9.0").numbers.at("2"), 64.0 * 1024 * 1024);
  EXPECT_EQ(d.dicts.at("9.0").numbers.at("6"), 512.0 * 1024);
  EXPECT_EQ(d.dicts.at("10.0").numbers.at("4"), 2097152.0);
  EXPECT_EQ(d.dicts.at("10.0").numbers.at("6"), 1048576.0);
  const std::string fi = "_use_oneshot_heuristics: dict[int, int] = {\n    2: 512,\n    4: 64,\n    8: 42,\n}\n";
  EXPECT_EQ(codegen::read_python_dict(fi, "trtllm_ar.py", "_use_oneshot_heuristics").numbers.at("8"), 42.0);
  // What is not a dict of numbers is refused, naming the file, the line and the dict.
  const std::vector<std::pair<std::string, std::string>> bad{
      {"X = {\n    2: foo,\n}\n", "trtllm_ar.py:2: column 'X': 'foo' is not a module-level constant"},
      {"X = {\n    2: 1,\n    2: 3,\n}\n", "trtllm_ar.py:3: column 'X': key '2' is given twice"},
      {"X = {2: 1 / 0}\n", "division by zero"},
      {"X = {2: [1]}\n", "'[' is not a number"},
      {"X = [1, 2]\n", "is not assigned a dict literal"},
      {"Y = {2: 1}\n", "no module-level assignment of X"},
      {"X = {\n    2: 1\n    4: 2,\n}\n", "trtllm_ar.py:3: column 'X': expected ',' or '}' after the value of key '2'"},
      {"X = {2.5: 1}\n", "key '2.5' is not an integer"},
  };
  for (const auto& [text, want] : bad) {
    const std::string why = input_error([&] { codegen::read_python_dict(text, "trtllm_ar.py", "X"); });
    EXPECT_NE(why.find(want), std::string::npos) << text << "\n-> " << why;
  }
}

// FlashInfer: the world sizes arfit does not decide keep --base's values, raised to the floor where they would send a
// decode step to two-shot's assert; every world size FlashInfer runs gets a value.
TEST(ConsumerRules, FlashinferBaseKeepsTheEnginesValuesAboveTheFloor) {
  Request r = fixture("fx_engines");
  r.tp = "2,4";
  r.base_path = "trtllm_ar.py";
  r.base_text = "_use_oneshot_heuristics: dict[int, int] = {2: 512, 4: 64, 8: 42, 16: 32}\n";
  const std::string file = generate(fixtures::fitted(), r, "flashinfer");
  const auto values = consumers::python_tp_entries(file, "USE_ONESHOT_HEURISTICS = ");
  ASSERT_TRUE(values);
  EXPECT_EQ(values->at(8), 42.0);
  EXPECT_EQ(values->at(16), 64.0) << "32 is below 16^2 / 4";
  EXPECT_NE(file.find("trtllm_ar.py's 32.0 would send token_num <= 16 to two-shot's assert"), std::string::npos) << file;
  EXPECT_NE(file.find("not decided by arfit: trtllm_ar.py's value"), std::string::npos);
  EXPECT_GE(engine_behaviour::check_flashinfer_runs(file, *values), 0);
  // Without --base, FlashInfer's own: 16 has none, so the floor.
  r.base_path.clear();
  const auto own = consumers::python_tp_entries(generate(fixtures::fitted(), r, "flashinfer"), "USE_ONESHOT_HEURISTICS = ");
  EXPECT_EQ(own->at(8), 42.0);
  EXPECT_EQ(own->at(16), 64.0);
  // A world size FlashInfer does not run is refused.
  r.tp = "2,6";
  EXPECT_EQ(usage_error([&] { generate(fixtures::fitted(), r, "flashinfer"); }).rfind("--tp: FlashInfer's fused all-reduce runs 2, 4, 8 or 16 GPUs, not 6", 0), 0u);
}

// vLLM: the world sizes arfit does not decide keep --base's values exactly; the capability must be one where vLLM runs
// symmetric memory (the base's own table says which).
TEST(ConsumerRules, VllmBaseKeepsTheEnginesValues) {
  Request r = fixture("fx_engines");
  r.tp = "2,4";
  r.base_path = "all_reduce_utils.py";
  r.base_text = "MiB = 1024 * 1024\nCUSTOM_ALL_REDUCE_MAX_SIZES = {\"9.0\": {2: 64 * MiB, 4: 32 * MiB, 6: 3 * MiB, 8: MiB // 4}}\n"
                "SYMM_MEM_ALL_REDUCE_MAX_SIZES = {\"9.0\": {2: 64 * MiB, 4: 32 * MiB, 6: 64 * MiB, 8: 64 * MiB}}\n";
  const std::string file = generate(fixtures::fitted(), r, "vllm");
  const auto values = consumers::python_tp_entries(file, "\"9.0\": ");
  ASSERT_TRUE(values);
  EXPECT_EQ(values->at(6), 3.0 * 1024 * 1024);
  EXPECT_EQ(values->at(8), 256.0 * 1024);
  EXPECT_LT(values->at(2), 8.0 * 1024 * 1024) << "decided by arfit against symmetric memory";
  // The base's symmetric-memory table has no 10.0: vLLM would never read the custom table there.
  r.sm = 100;
  const std::string why = usage_error([&] { generate(fixtures::fitted(), r, "vllm"); });
  EXPECT_NE(why.find("--sm 100: vLLM reads CUSTOM_ALL_REDUCE_MAX_SIZES only while torch symmetric memory runs"), std::string::npos) << why;
  // A base without the tables is bad input naming the file.
  r.sm = 90;
  r.base_text = "X = 1\n";
  EXPECT_NE(input_error([&] { generate(fixtures::fitted(), r, "vllm"); }).find("all_reduce_utils.py: column 'CUSTOM_ALL_REDUCE_MAX_SIZES': no module-level assignment"),
            std::string::npos);
}

// ---------------------------------------------------------------------------------------------------------------
// Versions

TEST(ConsumerVersions, EachFormatKnowsTheVersionsItWasReadAt) {
  EXPECT_EQ(codegen::vllm_version(""), "0.33.0");
  EXPECT_EQ(codegen::vllm_version("0.11.0rc2"), "0.11.0rc2");
  EXPECT_EQ(codegen::vllm_version("v0.10.2"), "v0.10.2");
  EXPECT_NE(usage_error([] { codegen::vllm_version("0.10.1"); }).find("before 0.10.2 vLLM has no CUSTOM_ALL_REDUCE_MAX_SIZES"), std::string::npos);
  EXPECT_NE(usage_error([] { codegen::vllm_version("0.34.0"); }).find("a later vLLM"), std::string::npos);
  EXPECT_EQ(usage_error([] { codegen::vllm_version("latest"); }).rfind("--consumer-version: 'latest' is not a version", 0), 0u);
  EXPECT_EQ(codegen::flashinfer_version("0.6.17"), "0.6.17");
  EXPECT_NE(usage_error([] { codegen::flashinfer_version("0.4.1"); }).find("token_num <= 128"), std::string::npos);
  EXPECT_EQ(codegen::nccl_example_plugin_version("2.30.7-1"), "2.30.7-1");
  EXPECT_NE(usage_error([] { codegen::nccl_example_plugin_version("2.29.7"); }).find("crashes on the first rule"), std::string::npos);
  EXPECT_NE(usage_error([] { codegen::nccl_example_plugin_version("2.26.2"); }).find("reads no config file"), std::string::npos);
  EXPECT_EQ(codegen::trtllm_version("").commit, "10a94126");
  EXPECT_EQ(codegen::trtllm_version("01e2c36").commit, "01e2c361");
  EXPECT_EQ(codegen::trtllm_version("005B299BD3").commit, "005b299b");
  EXPECT_NE(usage_error([] { codegen::trtllm_version("deadbeef"); }).find("give the engine's own customAllReduceUtils.h with --base"),
            std::string::npos);
  EXPECT_EQ(codegen::sglang_versions("").size(), 4u);
  EXPECT_EQ(codegen::sglang_versions("09e7d8edc6"), std::vector<std::string>{"s2-09e7d8ed"});
  EXPECT_EQ(codegen::sglang_versions("S3-DICT-CONFIGS"), std::vector<std::string>{"s3-dict-configs"});
  EXPECT_NE(usage_error([] { codegen::sglang_versions("s5-rows"); }).find("would be misread"), std::string::npos);
  // Every format that is not written for an engine refuses the options.
  Request r = fixture("fx_trtllm");
  r.consumer_version = "0.33.0";
  EXPECT_EQ(usage_error([&] { generate(fixtures::fitted(), r, "header"); }).rfind("--consumer-version: the header format", 0), 0u);
  r.consumer_version.clear();
  r.base_path = "x.py";
  EXPECT_EQ(usage_error([&] { generate(fixtures::fitted(), r, "header"); }).rfind("--base: the header format", 0), 0u);
  Request s = fixture("fx_engines");
  s.base_path = "x.py";
  EXPECT_EQ(usage_error([&] { generate(fixtures::fitted(), s, "sglang"); }).rfind("--base: the sglang format", 0), 0u);
  Request t = fixture("fx_tuner");
  t.base_path = "x.conf";
  EXPECT_EQ(usage_error([&] { generate(fixtures::fitted(), t, "nccl-tuner"); }).rfind("--base: the nccl-tuner format", 0), 0u);
  t.base_path.clear();
  t.consumer_version = "2.28.9";
  EXPECT_EQ(usage_error([&] { generate(fixtures::fitted(), t, "nccl-tuner"); }).rfind("--consumer-version 2.28.9:", 0), 0u);
}

// The generated Python refuses, when installed, an engine version outside the one it was written for.
TEST(ConsumerVersions, GeneratedPythonRefusesAnotherEngineVersion) {
  if (consumers::python3().empty()) GTEST_SKIP() << "python3 absent";
  Request r = fixture("fx_engines");
  const std::string file = generate(fixtures::fitted(), r, "flashinfer");
  const std::string out = python_output(file, R"(
for v in ("0.5.0", "0.6.18", "0.6.18rc7", "0.4.1", "0.7.0", "nightly"):
    try:
        check_version(v)
        print(v, "ok")
    except RuntimeError as e:
        print(v, "refused", "--consumer-version" in str(e))
)");
  EXPECT_EQ(out, "0.5.0 ok\n0.6.18 ok\n0.6.18rc7 ok\n0.4.1 refused True\n0.7.0 refused True\nnightly refused True\n");
  // A version outside the range is one whose code the writing arfit had not read: the advice is an arfit that knows it
  // (this arfit's codegen refuses --consumer-version 0.4.1), and the message says so.
  // What the file's check_version says of `running` (nothing when it accepts it).
  const auto refusal_of = [](const std::string& module, const std::string& running) {
    return python_output(module, "try:\n    check_version(\"" + running + "\")\nexcept RuntimeError as e:\n    print(e)\n");
  };
  const std::string advice = refusal_of(file, "0.4.1");
  EXPECT_NE(advice.find("regenerate it with an arfit that knows flashinfer 0.4.1"), std::string::npos) << advice;
  Request older = r;
  older.consumer_version = "0.4.1";
  EXPECT_NE(usage_error([&] { generate(fixtures::fitted(), older, "flashinfer"); }).find("arfit knows the rules of"), std::string::npos);
  // SGLang's snapshots: a file written for one refuses another this arfit knows, naming the option value that
  // writes a file for it, and that value is one codegen takes.
  Request one = r;
  one.consumer_version = "s1-0fbab45d";
  const std::string sg = generate(fixtures::fitted(), one, "sglang");
  const std::string refusal = refusal_of(sg, "s2-09e7d8ed");
  EXPECT_NE(refusal.find("regenerate it with arfit codegen --consumer-version s2-09e7d8ed"), std::string::npos) << refusal;
  Request other = r;
  other.consumer_version = "s2-09e7d8ed";
  EXPECT_NO_THROW(generate(fixtures::fitted(), other, "sglang"));
}

// A threshold or rule for a GPU count never measured rests on extrapolated predictions (the joint fit across GPU
// counts): every threshold format says so beside the value, and the tuner config above the rules of that count.
TEST(ConsumerRules, ThresholdsOfUnmeasuredGpuCountsAreMarkedExtrapolated) {
  Request r = fixture("fx_engines");
  r.tp = "8,16";
  std::string summary;
  const std::string fi = codegen::generate(fixtures::fitted(), [&] { Request x = r; x.models_path = "m.json"; return x; }(), "flashinfer", "m", &summary);
  EXPECT_NE(summary.find("TP 16: extrapolated"), std::string::npos) << summary;
  EXPECT_EQ(summary.find("TP 8: extrapolated"), std::string::npos) << summary;
  std::istringstream lines(fi);
  bool marked = false;
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("    16: ", 0) == 0) marked = line.find("arfit:") != std::string::npos && line.find("extrapolated") != std::string::npos;
  EXPECT_TRUE(marked) << fi;
  const std::string sg = generate(fixtures::fitted(), r, "sglang");
  EXPECT_NE(sg.find("# TP 16: extrapolated"), std::string::npos) << sg;
  Request t = fixture("fx_tuner");
  t.tp = "8,32";
  const std::string conf = generate(fixtures::fitted(), t, "nccl-tuner");
  EXPECT_NE(conf.find("# nRanks 32: "), std::string::npos) << conf;
  EXPECT_EQ(conf.find("# nRanks 8: "), std::string::npos) << conf;
  // The note is a comment: the example plugin's reader still loads every rule and nothing else.
  int rule_lines = 0;
  std::istringstream all(conf);
  for (std::string line; std::getline(all, line);) rule_lines += !line.empty() && line[0] != '#';
  EXPECT_EQ(consumers::load_tuner_config(conf).size(), static_cast<std::size_t>(rule_lines));
}
