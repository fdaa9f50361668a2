// ingest/pipe_table.h: markdown pipe tables, cell by cell (the nccl-tests reader turns them into samples; its
// tests in test_nccl_tests_text.cpp cover the samples).
#include <gtest/gtest.h>

#include "ingest/pipe_table.h"
#include "model/errors.h"

using namespace arfit::ingest::detail;
using arfit::Collective;
using arfit::InputError;

TEST(PipeTable, CellsAndSeparator) {
  EXPECT_EQ(pipe_cells("| a | b c |  "), (std::vector<std::string>{"a", "b c"}));
  EXPECT_EQ(pipe_cells("a|b"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(pipe_cells("| a || b |"), (std::vector<std::string>{"a", "", "b"}));
  EXPECT_TRUE(is_pipe_separator(pipe_cells("|---|:--:| -- |")));
  EXPECT_FALSE(is_pipe_separator(pipe_cells("|---|x|")));
  EXPECT_FALSE(is_pipe_separator(pipe_cells("|---||")));
}

TEST(PipeTable, HeadingGivesPayloadAndGpuCount) {
  const PipeHeading h = parse_pipe_heading("8x H200 node, 16GiB payload, 8 GPUs, by collective");
  EXPECT_EQ(h.text, "8x H200 node, 16GiB payload, 8 GPUs, by collective");
  EXPECT_EQ(h.size, 16LL << 30);
  EXPECT_EQ(h.ranks, 8);
  const PipeHeading none = parse_pipe_heading("results");
  EXPECT_FALSE(none.size);
  EXPECT_FALSE(none.ranks);
}

TEST(PipeTable, ColumnsByHeader) {
  const std::vector<std::string> header = {"Message size", "GPUs", "time (us)", "busbw (GB/s)", "busbw, NVLS off",
                                           "algbw",        "1 node", "algo NCCL picks"};
  const auto cols = pipe_columns(header, {{"1 node", 8}}, "t.md", 3);
  ASSERT_EQ(cols.size(), header.size());
  EXPECT_EQ(cols[0].kind, PipeColumnKind::Size);
  EXPECT_EQ(cols[1].kind, PipeColumnKind::Gpus);
  EXPECT_EQ(cols[2].kind, PipeColumnKind::Time);
  EXPECT_EQ(cols[2].unit, "us");
  EXPECT_EQ(cols[3].kind, PipeColumnKind::BusBw);
  EXPECT_EQ(cols[3].variant, "");  // the primary busbw column
  EXPECT_EQ(cols[4].kind, PipeColumnKind::BusBw);
  EXPECT_EQ(cols[4].variant, "NVLS off");
  EXPECT_EQ(cols[5].kind, PipeColumnKind::AlgBw);
  EXPECT_EQ(cols[6].kind, PipeColumnKind::UnnamedBw);
  EXPECT_EQ(cols[6].ranks, 8);
  EXPECT_EQ(cols[6].nodes, 1);
  EXPECT_EQ(cols[7].kind, PipeColumnKind::Other);
  EXPECT_EQ(cols[7].key, "algo_nccl_picks");
  try {
    pipe_columns({"size", "latency"}, {}, "t.md", 3);
    FAIL() << "a time column without a unit was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("t.md:3"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("names no time unit"), std::string::npos) << e.what();
  }
}

TEST(PipeTable, RowCellsKeepPrintedBandwidthDigits) {
  const auto cols = pipe_columns({"collective", "busbw (GB/s)", "algbw (GB/s)", "busbw, NVLS off (GB/s)", "note"}, {}, "t.md", 2);
  PipeHeading h = parse_pipe_heading("16GiB payload, 8 GPUs");
  const PipeRow r = parse_pipe_row(cols, {"all-reduce, `NCCL_NVLS_ENABLE=1`", "480.10", "274.3", "N/A", "x"}, h, "t.md", 4);
  EXPECT_EQ(r.size, 16LL << 30);
  EXPECT_EQ(r.ranks, 8);
  EXPECT_EQ(r.collective, Collective::AllReduce);
  EXPECT_EQ(r.variant, "NCCL_NVLS_ENABLE=1");
  EXPECT_EQ(r.busbw_text, "480.10");
  EXPECT_EQ(r.algbw_text, "274.3");
  ASSERT_EQ(r.further_bw.size(), 1u);
  EXPECT_EQ(r.further_bw[0].second, "N/A");
  EXPECT_EQ(r.other.at("note"), "x");
  EXPECT_FALSE(r.time_us);
  try {
    parse_pipe_row(cols, {"all_blah", "1", "1", "1", ""}, h, "t.md", 5);
    FAIL() << "an unknown collective was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("t.md:5"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unknown collective 'all_blah'"), std::string::npos) << e.what();
  }
}
