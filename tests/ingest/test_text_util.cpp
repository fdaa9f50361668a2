// The strict parsing helpers and the rank-count inference behind the readers.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>

#include "ingest/readers.h"
#include "ingest/text_util.h"

using namespace arfit::ingest::detail;
using arfit::Collective;

TEST(TextUtil, SizesWithUnitsAndSeparators) {
  EXPECT_EQ(parse_size("1024"), 1024);
  EXPECT_EQ(parse_size("1_073_741_824"), 1073741824);
  EXPECT_EQ(parse_size("1048_576"), 1048576);
  EXPECT_EQ(parse_size("32KiB"), 32768);
  EXPECT_EQ(parse_size("8 GiB"), 8589934592LL);
  EXPECT_EQ(parse_size("16M"), 16777216);
  EXPECT_EQ(parse_size("512B"), 512);
  std::string why;
  EXPECT_FALSE(parse_size("64KB", &why));
  EXPECT_NE(why.find("ambiguous"), std::string::npos);
  EXPECT_FALSE(parse_size("3 parsecs", &why));
  EXPECT_NE(why.find("unknown size unit"), std::string::npos);
  EXPECT_FALSE(parse_size("1.5B", &why));  // not a whole number of bytes
  EXPECT_EQ(parse_size("1.5KiB"), 1536);
}

TEST(TextUtil, BandwidthsAndTimes) {
  std::string why;
  EXPECT_DOUBLE_EQ(*parse_bandwidth_gbps("1.44GBps", "", &why), 1.44);
  EXPECT_DOUBLE_EQ(*parse_bandwidth_gbps("12 GB/s", "", &why), 12.0);
  EXPECT_DOUBLE_EQ(*parse_bandwidth_gbps("5", "GB/s", &why), 5.0);
  EXPECT_FALSE(parse_bandwidth_gbps("5", "", &why));
  EXPECT_NE(why.find("no unit"), std::string::npos);
  EXPECT_FALSE(parse_bandwidth_gbps("5 furlongs/s", "", &why));
  EXPECT_NE(why.find("unknown bandwidth unit"), std::string::npos);
  EXPECT_DOUBLE_EQ(*time_unit_to_us("ms"), 1000.0);
  EXPECT_FALSE(time_unit_to_us("min"));
}

TEST(TextUtil, StrictNumbers) {
  EXPECT_FALSE(parse_double("1O.0"));
  EXPECT_FALSE(parse_double(""));
  EXPECT_DOUBLE_EQ(*parse_double("1e-07"), 1e-7);
  EXPECT_FALSE(parse_int("12a"));
  EXPECT_EQ(*parse_int("-1"), -1);
  EXPECT_FALSE(parse_grouped_uint("_12"));
  EXPECT_FALSE(parse_grouped_uint("99999999999999999999999"));
  // The int64 range exactly: 2^63 - 1 reads (it was refused with every value above 922337203685477579x), 2^63 not.
  EXPECT_EQ(parse_grouped_uint("9223372036854775807"), std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(parse_grouped_uint("9_223_372_036_854_775_800"), std::int64_t{9223372036854775800});
  EXPECT_FALSE(parse_grouped_uint("9223372036854775808"));
  EXPECT_FALSE(parse_grouped_uint("9223372036854775810"));
  EXPECT_DOUBLE_EQ(half_ulp("0.01"), 0.005);
  EXPECT_DOUBLE_EQ(half_ulp("12"), 0.5);
  EXPECT_DOUBLE_EQ(half_ulp("12.5"), 0.05);
}

TEST(RankInference, PinsTheRankCountOrRefuses) {
  RankInference ar(Collective::AllReduce);
  ar.add("253.73", "444.02");  // 1.75 -> 8
  EXPECT_EQ(ar.rank_count(), 8);
  RankInference ag(Collective::AllGather);
  ag.add("200.41", "187.89");  // 0.9375 -> 16
  EXPECT_EQ(ag.rank_count(), 16);
  // Tiny values cannot tell 15 from 16 from 17.
  RankInference vague(Collective::AllGather);
  vague.add("0.10", "0.09");
  EXPECT_FALSE(vague.rank_count());
  // Rows that disagree: no answer.
  RankInference bad(Collective::AllReduce);
  bad.add("100.00", "175.00");  // 8
  bad.add("100.00", "150.00");  // 4
  EXPECT_FALSE(bad.rank_count());
  EXPECT_TRUE(bad.inconsistent());
  // Broadcast: factor 1 whatever n is.
  RankInference bc(Collective::Broadcast);
  bc.add("10.00", "10.00");
  EXPECT_FALSE(bc.rank_count());
}
