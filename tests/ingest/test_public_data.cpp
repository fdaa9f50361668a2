// Every file under the public data folder's nccl-tests/ and aiconfigurator/ ingests without error, with the
// row counts INDEX.md gives. The expected counts are read from INDEX.md's tables (column "rows"), not
// hard-coded. Skips when the folder is absent.
//
// How a row maps to samples (docs/ingest.md): IngestResult::rows counts table data rows. nccl-tests text
// rows give one out-of-place sample each (plus an in-place one when the table has those columns);
// markdown bandwidth rows give one sample per bandwidth column (the first is the row's primary sample, the
// others carry extra["bw_column"]); aiconfigurator rows give one sample each.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "ingest/ingest.h"
#include "test_support.h"

namespace fs = std::filesystem;

namespace {

// slug -> rows, from every markdown table of INDEX.md that has "slug" and "rows" columns.
std::map<std::string, long> index_rows(const std::string& index_path) {
  std::map<std::string, long> out;
  std::ifstream in(index_path);
  std::string line;
  int slug_col = -1, rows_col = -1;
  auto cells = [](const std::string& l) {
    std::vector<std::string> c;
    std::string cur;
    for (std::size_t i = 1; i < l.size(); ++i) {
      if (l[i] == '|') {
        auto b = cur.find_first_not_of(' '), e = cur.find_last_not_of(' ');
        c.push_back(b == std::string::npos ? "" : cur.substr(b, e - b + 1));
        cur.clear();
      } else {
        cur += l[i];
      }
    }
    return c;
  };
  while (std::getline(in, line)) {
    if (line.empty() || line[0] != '|') {
      slug_col = rows_col = -1;
      continue;
    }
    auto c = cells(line);
    if (slug_col < 0) {
      for (std::size_t i = 0; i < c.size(); ++i) {
        if (c[i] == "slug") slug_col = static_cast<int>(i);
        if (c[i] == "rows") rows_col = static_cast<int>(i);
      }
      continue;
    }
    if (static_cast<int>(c.size()) <= std::max(slug_col, rows_col) || c[slug_col].find("---") != std::string::npos) continue;
    out[c[slug_col]] = std::stol(c[rows_col]);
  }
  return out;
}

}  // namespace

TEST(PublicData, EveryFileIngestsWithIndexRowCounts) {
  const std::string dir = arfit::testing::public_data_dir();
  if (dir.empty()) GTEST_SKIP() << "public data folder absent (set ARFIT_PUBLIC_DATA_DIR)";
  const auto expected = index_rows(dir + "/INDEX.md");
  ASSERT_GT(expected.size(), 100u) << "INDEX.md tables not found or changed layout";
  std::size_t files = 0;
  for (const char* sub : {"nccl-tests", "aiconfigurator"}) {
    for (const auto& e : fs::directory_iterator(fs::path(dir) / sub)) {
      if (!e.is_regular_file()) continue;
      ++files;
      const std::string stem = e.path().stem().string();
      const std::string slug = std::string(sub) == "nccl-tests" ? stem : std::string(sub) + "/" + stem;
      SCOPED_TRACE(e.path().string());
      auto it = expected.find(slug);
      ASSERT_NE(it, expected.end()) << "no INDEX.md row for " << slug;
      arfit::ingest::IngestResult r;
      ASSERT_NO_THROW(r = arfit::ingest::ingest_file(e.path().string())) << e.path();
      EXPECT_EQ(static_cast<long>(r.rows), it->second);
      // Every sample is usable downstream: known rank count, and either a timing or status Failed.
      std::size_t out_of_place = 0;
      for (const auto& s : r.samples) {
        EXPECT_GE(s.nranks, 1);
        EXPECT_TRUE(s.ok() ? s.time_us > 0 : s.time_us == 0);
        EXPECT_EQ(s.source, e.path().filename().string());
        EXPECT_FALSE(s.extra.at("system").empty());
        if (!s.in_place && !s.extra.count("bw_column")) ++out_of_place;
      }
      if (std::string(sub) == "aiconfigurator") {
        EXPECT_EQ(r.format, arfit::ingest::Format::Aiconfigurator);
        EXPECT_EQ(r.samples.size(), r.rows);
        EXPECT_EQ(r.samples.front().backend, "aiconfigurator");
      } else {
        EXPECT_EQ(r.format, arfit::ingest::Format::NcclTests);
        EXPECT_EQ(out_of_place, r.rows);  // one primary (out-of-place) sample per row
      }
    }
  }
  EXPECT_EQ(files, expected.size());
}

TEST(PublicData, SpotChecks) {
  const std::string dir = arfit::testing::public_data_dir();
  if (dir.empty()) GTEST_SKIP() << "public data folder absent (set ARFIT_PUBLIC_DATA_DIR)";
  // An aiconfigurator NCCL table: message_size is elements, latency ms.
  auto r = arfit::ingest::ingest_file(dir + "/aiconfigurator/aic_h200_sxm_nccl_2.29.2_nccl_perf.txt");
  const auto& s = r.samples.front();
  EXPECT_EQ(s.extra.at("system"), "h200_sxm");
  EXPECT_EQ(s.device, "NVIDIA H200");
  EXPECT_EQ(s.strategy, "NCCL");
  EXPECT_EQ(s.dtype, "fp16");
  EXPECT_EQ(s.bytes, 512);               // 256 half elements
  EXPECT_NEAR(s.time_us, 5.36, 1e-9);    // 0.00536 ms
  // The mpirun-prefixed AWS log without a device list: 8 ranks from busbw/algbw = 1.75.
  auto a = arfit::ingest::ingest_file(dir + "/nccl-tests/aws_p5_h100_1node8gpu_allreduce_batch.txt");
  EXPECT_EQ(a.samples.front().nranks, 8);
  EXPECT_EQ(a.samples.front().collective, arfit::Collective::AllReduce);
}
