// nccl-tests JSON, PARAM comms, TensorRT-LLM CSV, aiconfigurator CSV, arfit CSV and format detection,
// with small hand-written inputs.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "ingest/ingest.h"
#include "model/errors.h"
#include "model/sample_csv.h"
#include "model/sm_targets.h"

using arfit::Collective;
using arfit::FusionOp;
using arfit::InputError;
using arfit::Sample;
using arfit::ingest::Format;
using arfit::ingest::ingest_text;
using arfit::ingest::IngestResult;
using arfit::ingest::Options;

namespace {
std::string error_of(const std::string& text, const std::string& name, Options o = {}) {
  try {
    ingest_text(text, name, o);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}
}  // namespace

// ---------------- nccl-tests JSON ----------------
const char* kJson = R"({"version": 1, "start_time": "x", "args": ["/opt/nt/build/reduce_scatter_perf", "-b", "8"],
 "env": [], "nccl_version": 22703,
 "config": {"nthreads": 1, "ngpus": 1, "iterations": 25,
            "devices": [{"rank": 0, "group": 0, "pid": 1, "hostname": "a", "device": 0, "device_hex": "0000:01:00", "device_info": "Blue GPU"},
                        {"rank": 1, "group": 0, "pid": 2, "hostname": "b", "device": 0, "device_hex": "0000:01:00", "device_info": "Blue GPU"}]},
 "results": [
  {"size": 1024, "count": 128, "type": "half", "redop": "sum", "root": "    -1",
   "out_of_place": {"time": 10.5, "alg_bw": 0.1, "bus_bw": 0.05, "nwrong": 0.0},
   "in_place": {"time": "nan", "alg_bw": 0.0, "bus_bw": 0.0, "nwrong": 0.0}, "actual_iterations": 25, "experiment_name": ""},
  {"size": 2048, "count": 256, "type": "half", "redop": "sum", "root": "    -1",
   "out_of_place": {"time": 11.0, "alg_bw": 0.2, "bus_bw": 0.1, "nwrong": 2.0},
   "in_place": {"time": 11.5, "alg_bw": 0.2, "bus_bw": 0.1, "nwrong": null}, "actual_iterations": 25, "experiment_name": ""}
 ], "end_time": "y"})";

TEST(NcclTestsJson, ReadsResultsDevicesAndFailures) {
  IngestResult r = ingest_text(kJson, "dir/run.json", Options{});
  EXPECT_EQ(r.format, Format::NcclTestsJson);
  EXPECT_EQ(r.rows, 2u);
  ASSERT_EQ(r.samples.size(), 4u);
  const Sample& s = r.samples[0];
  EXPECT_EQ(s.collective, Collective::ReduceScatter);
  EXPECT_EQ(s.nranks, 2);
  EXPECT_EQ(s.nnodes, 2);
  EXPECT_EQ(s.dtype, "fp16");
  EXPECT_EQ(s.device, "Blue GPU");
  EXPECT_EQ(s.extra.at("hosts"), "a b");  // the devices' hostnames, sorted, as the text log's
  EXPECT_EQ(s.iterations, 25);
  EXPECT_DOUBLE_EQ(s.time_us, 10.5);
  EXPECT_FALSE(r.samples[1].ok());  // "nan" time
  EXPECT_TRUE(r.samples[1].in_place);
  EXPECT_FALSE(r.samples[2].ok());  // nwrong 2
  EXPECT_EQ(r.samples[2].wrong, 2);
  EXPECT_TRUE(r.samples[3].ok());   // nwrong null = not validated
  EXPECT_EQ(r.failed, 2u);
  std::string e = error_of("{\"results\": [ {\"size\": 8,, } ]}", "broken.json");
  EXPECT_EQ(e.rfind("broken.json:1:", 0), 0u) << e;
  // A number too large for a double (found by the fuzzer) is bad input, not a crash.
  e = error_of("{\"results\": [8e884444444]}", "big.json");
  EXPECT_EQ(e.rfind("big.json:", 0), 0u) << e;
  // A wrong-element count beyond any integer (found by the fuzzer) saturates: the sample is failed.
  std::string huge = kJson;
  huge.replace(huge.find("\"nwrong\": 2.0"), 13, "\"nwrong\": 6.7e79");
  r = ingest_text(huge, "dir/run.json", Options{});
  ASSERT_EQ(r.samples.size(), 4u);
  EXPECT_FALSE(r.samples[2].ok());
  EXPECT_EQ(r.samples[2].wrong, std::numeric_limits<std::int64_t>::max());
}

// A result row holding neither placement (both missing or null) measured nothing: it used to be read as no
// sample at all, so a file of such rows became an empty sample file with exit 0. It is bad input naming the
// row; a row with one placement null still reads.
TEST(NcclTestsJson, ResultWithoutAnyPlacementIsAnError) {
  std::string none = kJson;
  const std::size_t from = none.find("\"out_of_place\": {\"time\": 11.0");
  const std::size_t to = none.find("\"actual_iterations\"", from);
  none.replace(from, to - from, "\"in_place\": null, ");
  const std::string e = error_of(none, "run.json");
  EXPECT_EQ(e.rfind("run.json:", 0), 0u) << e;
  EXPECT_NE(e.find("/results/1"), std::string::npos) << e;
  EXPECT_NE(e.find("neither 'out_of_place' nor 'in_place'"), std::string::npos) << e;
  std::string one = kJson;
  const std::size_t nan_at = one.find("\"in_place\": {\"time\": \"nan\"");
  one.replace(nan_at, one.find('}', nan_at) + 1 - nan_at, "\"in_place\": null");
  EXPECT_EQ(ingest_text(one, "run.json", Options{}).samples.size(), 3u);
}

// The node count is the devices list's hostnames: more of them than the ranks --nranks gives names the list (line 4
// of kJson), the hostnames and the option; --nnodes sets the node count instead, and a --nnodes beyond the ranks is
// ingest's own message, not the list's.
TEST(NcclTestsJson, NodeCountBeyondTheRanksNamesTheHostnamesAndTheOptions) {
  Options one_rank;
  one_rank.nranks = 1;
  std::string e = error_of(kJson, "run.json", one_rank);
  EXPECT_EQ(e.rfind("run.json:4: /config/devices: 2 distinct hostnames (nodes), more than the 1 rank(s) --nranks gives", 0), 0u) << e;
  EXPECT_NE(e.find("--nnodes"), std::string::npos) << e;
  Options one_node = one_rank;
  one_node.nnodes = 1;
  const IngestResult r = ingest_text(kJson, "run.json", one_node);
  ASSERT_EQ(r.samples.size(), 4u);
  EXPECT_EQ(r.samples[0].nranks, 1);
  EXPECT_EQ(r.samples[0].nnodes, 1);
  Options two_nodes = one_rank;
  two_nodes.nnodes = 2;
  e = error_of(kJson, "run.json", two_nodes);
  EXPECT_NE(e.find("--nnodes 2 is more than the 1 rank(s)"), std::string::npos) << e;
  EXPECT_EQ(e.find("/config/devices"), std::string::npos) << e;
}

// ---------------- PARAM comms ----------------
const char* kParam = R"([Rank   0] world_size: 4
	COMMS-RES       size (B)  nElementsPerRank   Latency(us):p50         p75         p95         Min         Max    AlgBW(GB/s)    BusBW(GB/s)
	COMMS-RES-all_reduce           1024               256              20.0        21.0        25.0        19.0        30.0          0.051          0.077
	COMMS-RES-all_reduce           2048               512              22.0        23.0        26.0        21.0        31.0          0.093          0.140
)";

TEST(ParamComms, RegularSweep) {
  IngestResult r = ingest_text(kParam, "param.log", Options{});
  EXPECT_EQ(r.format, Format::ParamComms);
  ASSERT_EQ(r.samples.size(), 2u);
  const Sample& s = r.samples[1];
  EXPECT_EQ(s.collective, Collective::AllReduce);
  EXPECT_EQ(s.nranks, 4);
  EXPECT_EQ(s.bytes, 2048);
  EXPECT_DOUBLE_EQ(s.time_us, 22.0);
  EXPECT_DOUBLE_EQ(s.min_us, 21.0);
  EXPECT_DOUBLE_EQ(s.max_us, 31.0);
  EXPECT_EQ(s.extra.at("p95_us"), "26.0");
  EXPECT_EQ(s.backend, "param");
  // Rank count from BusBW/AlgBW when the log has no world_size (1.5 = 2*3/4).
  std::string no_world = std::string(kParam).substr(std::string(kParam).find('\n') + 1);
  EXPECT_EQ(ingest_text(no_world, "param.log", Options{}).samples[0].nranks, 4);
  // A row whose column count differs from the header.
  std::string bad = no_world + "\tCOMMS-RES-all_reduce 4096 1024 30.0 31.0\n";
  std::string e = error_of(bad, "param.log");
  EXPECT_EQ(e.rfind("param.log:4:", 0), 0u) << e;
  // Sizes going down.
  bad = no_world + "\tCOMMS-RES-all_reduce 1024 256 20.0 21.0 25.0 19.0 30.0 0.051 0.077\n";
  e = error_of(bad, "param.log");
  EXPECT_EQ(e.rfind("param.log:4:", 0), 0u) << e;
  EXPECT_NE(e.find("increase"), std::string::npos) << e;
  // Every row's size beyond int64: the error counts the dropped rows and names the first with its line.
  std::string all_dropped = kParam;
  for (const char* size : {"1024  ", "2048  "}) all_dropped.replace(all_dropped.find(size), 4, "-1");
  e = error_of(all_dropped, "param.log");
  EXPECT_NE(e.find("2 data row(s), every one dropped"), std::string::npos) << e;
  EXPECT_NE(e.find("param.log:3: row dropped: size '-1'"), std::string::npos) << e;
}

const char* kParamSplit = R"(	COMMS-RES       size (B)         split   Latency(us):p50
	COMMS-RES-all_to_allv      4096  4096,10.0-12.0-11.0-30.0,1024:1024:1024:1024   12.5
	COMMS-RES-all_to_allv      8192  8192,20.0-22.0-21.0-40.0,2048:2048:2048:2048   22.5
)";

TEST(ParamComms, AllToAllvSplitMode) {
  IngestResult r = ingest_text(kParamSplit, "a2av.log", Options{});
  ASSERT_EQ(r.samples.size(), 2u);
  const Sample& s = r.samples[0];
  EXPECT_EQ(s.collective, Collective::AllToAllV);
  EXPECT_EQ(s.splits, "4096,10.0-12.0-11.0-30.0,1024:1024:1024:1024");
  EXPECT_EQ(s.nranks, 4);  // four per-rank latencies
  EXPECT_DOUBLE_EQ(s.time_us, 12.5);
  EXPECT_DOUBLE_EQ(s.min_us, 10.0);
  EXPECT_DOUBLE_EQ(s.max_us, 30.0);
  std::string bad = kParamSplit;
  bad.replace(bad.find("10.0-12.0"), 9, "10.0-x2.0");
  std::string e = error_of(bad, "a2av.log");
  EXPECT_EQ(e.rfind("a2av.log:2:", 0), 0u) << e;
}

// ---------------- TensorRT-LLM CSV ----------------
const char* kTrt = R"(world_size,dtype,size,num_tokens,hidden_size,strategy,fusion,op,time (us)
8,bfloat16,4096,1,4096,ONESHOT,NONE,allreduce,7.5
8,bfloat16,8192,2,4096,TWOSHOT,RESIDUAL_RMS_NORM,allreduce,9.25
)";

TEST(TrtllmCsv, ColumnsAndVariants) {
  IngestResult r = ingest_text(kTrt, "out/benchmark.tp8.sm90.csv", Options{});
  EXPECT_EQ(r.format, Format::TrtllmCsv);
  ASSERT_EQ(r.samples.size(), 2u);
  const Sample& s = r.samples[1];
  EXPECT_EQ(s.collective, Collective::AllReduce);
  EXPECT_EQ(s.nranks, 8);
  // The table does not say its SM; the name does, as the machine label, read and said as a name (docs/fit.md).
  EXPECT_EQ(s.sm, 0);
  EXPECT_EQ(s.extra.at("system"), "benchmark.tp8.sm90");
  EXPECT_EQ(arfit::datasheet_sm(s.sm, s.device, s.extra.at("system")), 90);
  EXPECT_EQ(s.tokens, 2);
  EXPECT_EQ(s.hidden, 4096);
  EXPECT_EQ(s.bytes, 2 * 4096 * 2);
  EXPECT_EQ(s.strategy, "TWOSHOT");
  EXPECT_EQ(s.fusion, FusionOp::ResidualRmsNorm);
  EXPECT_DOUBLE_EQ(s.time_us, 9.25);
  EXPECT_EQ(s.backend, "trtllm");
  // time_ms and fusion_op variants.
  const char* ms = "world_size,dtype,size,num_tokens,hidden_size,strategy,fusion_op,time_ms\n"
                   "4,float16,2048,1,2048,nccl,RESIDUAL_RMS_NORM_QUANT_FP8,0.012\n";
  IngestResult m = ingest_text(ms, "b.csv", Options{});
  ASSERT_EQ(m.samples.size(), 1u);
  EXPECT_DOUBLE_EQ(m.samples[0].time_us, 12.0);
  EXPECT_EQ(m.samples[0].strategy, "NCCL");
  EXPECT_EQ(m.samples[0].fusion, FusionOp::ResidualRmsNormQuantFp8);
  // size that is neither elements nor bytes of num_tokens*hidden_size.
  std::string bad = std::string(kTrt) + "8,bfloat16,999,1,4096,ONESHOT,NONE,allreduce,7.5\n";
  std::string e = error_of(bad, "t.csv");
  EXPECT_EQ(e.rfind("t.csv:4: column 'size':", 0), 0u) << e;
  // Unknown fusion op, unknown time unit.
  e = error_of("world_size,dtype,size,strategy,fusion,time (us)\n8,bf16,8,NCCL,MAGIC,1.0\n", "t.csv");
  EXPECT_EQ(e.rfind("t.csv:2: column 'fusion':", 0), 0u) << e;
  e = error_of("world_size,dtype,size,strategy,fusion,time (s)\n8,bf16,8,NCCL,NONE,1.0\n", "t.csv", [] {
    Options o;
    o.format = Format::TrtllmCsv;
    return o;
  }());
  EXPECT_NE(e.find("unknown time column/unit"), std::string::npos) << e;
}

// ---------------- aiconfigurator ----------------
const char* kAic = R"(# SOURCE: hand-written example in the aiconfigurator layout
# HARDWARE: device='Green GPU' system=green_box
framework,version,device,op_name,kernel_source,allreduce_dtype,num_gpus,message_size,latency,backend
vLLM,0.1.0,Green GPU,all_reduce,vLLM_custom_graph,bfloat16,2,128,0.004,vllm_graph
vLLM,0.1.0,Green GPU,all_reduce,vLLM_custom_eager,bfloat16,2,128,0.040,vllm_eager
vLLM,0.1.0,Green GPU,all_reduce,vLLM_custom_graph,bfloat16,2,256,0.005,vllm_graph
vLLM,0.1.0,Green GPU,all_reduce,vLLM_custom_graph,bfloat16,2,128,0.0041,vllm_graph
)";

TEST(Aiconfigurator, ElementsToBytesMsToUsStrategyAndExtras) {
  IngestResult r = ingest_text(kAic, "data/aic_green_box_vllm_0.1.0_custom_allreduce_perf.txt", Options{});
  EXPECT_EQ(r.format, Format::Aiconfigurator);
  EXPECT_EQ(r.rows, 4u);
  ASSERT_EQ(r.samples.size(), 4u);
  const Sample& s = r.samples[0];
  EXPECT_EQ(s.collective, Collective::AllReduce);
  EXPECT_EQ(s.bytes, 256);  // 128 bf16 elements
  EXPECT_DOUBLE_EQ(s.time_us, 4.0);
  EXPECT_EQ(s.strategy, "vLLM_custom_graph");
  EXPECT_EQ(s.dtype, "bf16");
  EXPECT_EQ(s.nranks, 2);
  EXPECT_EQ(s.device, "Green GPU");
  EXPECT_EQ(s.backend, "aiconfigurator");
  EXPECT_EQ(s.extra.at("system"), "green_box");
  EXPECT_EQ(s.extra.at("framework"), "vLLM");
  EXPECT_EQ(s.extra.at("version"), "0.1.0");
  EXPECT_EQ(s.extra.at("aic_backend"), "vllm_graph");
  EXPECT_EQ(s.source, "aic_green_box_vllm_0.1.0_custom_allreduce_perf.txt");
  EXPECT_EQ(r.samples[1].strategy, "vLLM_custom_eager");
  // The 4th row repeats (graph, 128 elements): a second sweep, kept and counted.
  EXPECT_EQ(r.duplicates, 1u);
  EXPECT_FALSE(r.warnings.empty());
}

// The machine label is what the table says (its system= note) whatever its name: the same bytes under another name,
// even another aiconfigurator name, are the same machine. Only a table without the note is labelled by its name.
TEST(Aiconfigurator, TheSystemNoteOverridesTheFileName) {
  for (const char* name : {"data/aic_green_box_vllm_0.1.0_custom_allreduce_perf.txt", "data/aic_h100_sxm_vllm_0.1.0_x.txt",
                           "renamed.txt"}) {
    const IngestResult r = ingest_text(kAic, name, Options{});
    ASSERT_FALSE(r.samples.empty()) << name;
    EXPECT_EQ(r.samples[0].extra.at("system"), "green_box") << name;
  }
  std::string no_note = kAic;
  no_note.erase(no_note.find("# HARDWARE"), no_note.find("framework,") - no_note.find("# HARDWARE"));
  EXPECT_EQ(ingest_text(no_note, "data/aic_h100_sxm_vllm_0.1.0_x.txt", Options{}).samples[0].extra.at("system"), "h100_sxm");
  EXPECT_EQ(ingest_text(no_note, "renamed.txt", Options{}).samples[0].extra.at("system"), "renamed");
}

TEST(Aiconfigurator, NcclTableInt8AndHalfAndErrors) {
  const char* t = "nccl_dtype,num_gpus,message_size,kernel_source,op_name,latency\n"
                  "half,4,1024,NCCL,all_gather,0.01\n"
                  "int8,4,1024,NCCL,alltoall,0.02\n";
  IngestResult r = ingest_text(t, "x/aic_box9_nccl_2.0_nccl_perf.txt", Options{});
  ASSERT_EQ(r.samples.size(), 2u);
  EXPECT_EQ(r.samples[0].bytes, 2048);
  EXPECT_EQ(r.samples[0].dtype, "fp16");
  EXPECT_EQ(r.samples[0].collective, Collective::AllGather);
  EXPECT_EQ(r.samples[1].bytes, 1024);
  EXPECT_EQ(r.samples[1].collective, Collective::AllToAll);
  EXPECT_EQ(r.samples[1].extra.at("system"), "box9");
  EXPECT_EQ(r.samples[1].strategy, "NCCL");
  std::string e = error_of(std::string(t) + "quarter,4,1024,NCCL,all_gather,0.01\n", "a.csv");
  EXPECT_EQ(e.rfind("a.csv:4: column 'nccl_dtype':", 0), 0u) << e;
  e = error_of(std::string(t) + "half,4,1024,NCCL,all_gather,inf\n", "a.csv");
  EXPECT_EQ(e.rfind("a.csv:4: column 'latency':", 0), 0u) << e;
  e = error_of(std::string(t) + "half,4,1024,NCCL,all_gather\n", "a.csv");
  EXPECT_EQ(e.rfind("a.csv:4:", 0), 0u) << e;
  EXPECT_NE(e.find("fields"), std::string::npos) << e;
}

// ---------------- arfit CSV, detection ----------------
TEST(ArfitCsv, RoundTripThroughIngest) {
  arfit::SampleFile f;
  Sample s;
  s.nranks = 8;
  s.bytes = 4096;
  s.time_us = 12.5;
  s.extra["system"] = "q";
  f.samples.push_back(s);
  IngestResult r = ingest_text(arfit::format_samples_csv(f), "s.csv", Options{});
  EXPECT_EQ(r.format, Format::ArfitCsv);
  ASSERT_EQ(r.samples.size(), 1u);
  EXPECT_EQ(r.samples[0].bytes, 4096);
  EXPECT_EQ(r.samples[0].extra.at("system"), "q");
}

// The two CSV readers share their header and row checks (ingest/readers.h csv_header_columns, csv_row_fields): an
// empty or repeated column name (TensorRT-LLM's compared lower-cased), an unterminated quoted field and a row of
// another field count are errors naming the file and line.
TEST(CsvReaders, HeaderAndRowErrorsNameTheLine) {
  const auto first_line = [](const char* text) { return std::string(text).substr(0, std::string(text).find('\n')); };
  const std::string trt_header = first_line(kTrt);
  std::string aic_body = kAic;
  const std::size_t aic_header_at = aic_body.find("framework,");
  const std::string aic_head = aic_body.substr(0, aic_header_at);  // two comment lines: the header is line 3
  const std::string aic_header = first_line(kAic + aic_header_at);
  const std::string aic_row = "vLLM,0.1.0,Green GPU,all_reduce,vLLM_custom_graph,bfloat16,2,128,0.004,vllm_graph\n";
  const std::string trt_row = "8,bfloat16,4096,1,4096,ONESHOT,NONE,allreduce,7.5\n";
  Options trt, aic;
  trt.format = Format::TrtllmCsv;
  aic.format = Format::Aiconfigurator;
  std::string e = error_of(trt_header + ",SIZE\n" + trt_row, "t.csv", trt);
  EXPECT_EQ(e.rfind("t.csv:1:", 0), 0u) << e;
  EXPECT_NE(e.find("duplicated column"), std::string::npos) << e;
  e = error_of(aic_head + aic_header + ",,x\n" + aic_row, "a.txt", aic);
  EXPECT_EQ(e.rfind("a.txt:3:", 0), 0u) << e;
  EXPECT_NE(e.find("empty column name at position 11"), std::string::npos) << e;
  e = error_of(trt_header + "\n" + trt_row + "8,\"bfloat16,4096\n", "t.csv", trt);
  EXPECT_EQ(e, "t.csv:3: unterminated quoted field") << e;
  e = error_of(aic_head + aic_header + "\n" + aic_row + "vLLM,0.1.0\n", "a.txt", aic);
  EXPECT_EQ(e, "a.txt:5: expected 10 fields (as the header, line 3), found 2") << e;
}

TEST(Detect, FormatsByContentAndOverride) {
  EXPECT_EQ(arfit::ingest::detect_format(kJson, "a"), Format::NcclTestsJson);
  EXPECT_EQ(arfit::ingest::detect_format(kParam, "a"), Format::ParamComms);
  EXPECT_EQ(arfit::ingest::detect_format(kTrt, "a"), Format::TrtllmCsv);
  EXPECT_EQ(arfit::ingest::detect_format(kAic, "a"), Format::Aiconfigurator);
  EXPECT_THROW(arfit::ingest::detect_format("hello world\n", "a"), InputError);
  EXPECT_EQ(arfit::ingest::parse_format("nccl-tests-json"), Format::NcclTestsJson);
  EXPECT_THROW(arfit::ingest::parse_format("csv"), std::invalid_argument);
  for (Format f : {Format::Auto, Format::ArfitCsv, Format::NcclTests, Format::NcclTestsJson, Format::ParamComms,
                   Format::TrtllmCsv, Format::Aiconfigurator})
    EXPECT_EQ(arfit::ingest::parse_format(arfit::ingest::to_string(f)), f);
  // --format forces a reader: the aiconfigurator table read as nccl-tests text has no nccl-tests table.
  Options o;
  o.format = Format::NcclTests;
  EXPECT_THROW(ingest_text(kAic, "a.txt", o), InputError);
}

// The -J file of a run with the per-iteration report (-I 1): the same statistics the text table prints.
TEST(NcclTestsJson, PerIterationReportGivesEachPlacementsSpread) {
  const char* json = R"({"version": 1, "args": ["all_reduce_perf", "-I", "1"], "nccl_version": 22902,
 "config": {"nthreads": 1, "ngpus": 2, "iterations": 20},
 "results": [
  {"size": 1024, "count": 256, "type": "float", "redop": "sum", "root": "    -1",
   "out_of_place": {"time": 20.0, "alg_bw": 0.05, "bus_bw": 0.05, "nwrong": 0.0},
   "out_of_place_per_iter": {"skipped_iterations": 0, "min_us": 18.0, "max_us": 26.0, "avg_us": 20.1, "p50_us": 19.9,
                             "p95_us": 24.0, "p99_us": 25.0, "stdev_us": 0.7, "cv_pct": 3.4, "times_us": [18.0, 26.0]},
   "in_place": {"time": 21.0, "alg_bw": 0.05, "bus_bw": 0.05, "nwrong": 0.0},
   "in_place_per_iter": {"min_us": 19.0, "max_us": 27.0, "p99_us": 26.0, "cv_pct": 3.5},
   "actual_iterations": 20, "experiment_name": ""}]})";
  const IngestResult r = ingest_text(json, "h100_allreduce.json", Options{});
  ASSERT_EQ(r.samples.size(), 2u);
  const Sample& out = r.samples[0];
  EXPECT_FALSE(out.in_place);
  EXPECT_DOUBLE_EQ(out.time_us, 20.0);
  EXPECT_DOUBLE_EQ(out.min_us, 18.0);
  EXPECT_DOUBLE_EQ(out.max_us, 26.0);
  EXPECT_EQ(out.extra.at("p99_us"), "25");
  EXPECT_EQ(out.extra.at("cv_pct"), "3.4");
  EXPECT_DOUBLE_EQ(r.samples[1].min_us, 19.0);
  EXPECT_DOUBLE_EQ(r.samples[1].max_us, 27.0);
  // A negative statistic is bad input naming its place in the document.
  std::string negative = json;
  negative.replace(negative.find("\"min_us\": 18.0"), 14, "\"min_us\": -1.0");
  const std::string e = error_of(negative, "h100_allreduce.json");
  EXPECT_NE(e.find("/results/0/out_of_place_per_iter/min_us"), std::string::npos) << e;
}
