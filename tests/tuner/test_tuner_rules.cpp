// The rules file reader of the tuner plugin: what `arfit codegen --format nccl-tuner` writes reads back rule for
// rule; anything the example plugin would silently misread is refused naming the line and the field.
#include <gtest/gtest.h>

#include "model/errors.h"
#include "tuner/tuner_rules.h"

using arfit::tuner::read_tuner_rules;

TEST(TunerRules, ReadsTheExamplePluginsFormat) {
  const auto rules = read_tuner_rules(
      "# comment\n\nallreduce,0,11585,ring,ll,0,1,8,-1,-1\n  allgather , 5 , 18446744073709551615 , nvls_tree , LL128 , -1 , -1 , -1\n"
      "broadcast,1,2,pat,simple,4,2,16,3,1\n",
      "t.conf");
  ASSERT_EQ(rules.size(), 3u);
  EXPECT_EQ(rules[0].function, 4);
  EXPECT_EQ(rules[0].max_bytes, 11585u);
  EXPECT_EQ(rules[0].line, 3);
  EXPECT_EQ(rules[1].function, 2);
  EXPECT_EQ(rules[1].algorithm, 5);
  EXPECT_EQ(rules[1].protocol, 1);
  EXPECT_EQ(rules[1].max_bytes, 18446744073709551615ull);
  EXPECT_EQ(rules[2].reg_buff, 1);
  EXPECT_TRUE(rules[2].matches(0, 2, 16, 2, 3, 1));
  EXPECT_FALSE(rules[2].matches(0, 3, 16, 2, 3, 1));
  EXPECT_FALSE(rules[2].matches(0, 2, 16, 1, 3, 1));
  EXPECT_TRUE(rules[1].matches(2, 1u << 30, 7, 3, 9, 0));
}

TEST(TunerRules, WhatTheExamplePluginWouldMisreadIsRefused) {
  const std::vector<std::pair<std::string, std::string>> bad{
      {"alreduce,0,1,ring,ll,0,1,8\n", "t.conf:1: column 'collective_type': 'alreduce' is not one of"},
      {"allreduce,0,1,rings,ll,0,1,8\n", "t.conf:1: column 'algorithm': 'rings'"},
      {"allreduce,0,1,ring,ll256,0,1,8\n", "t.conf:1: column 'protocol'"},
      {"#\nallreduce,9,1,ring,ll,0,1,8\n", "t.conf:2: column 'max_bytes': below min_bytes 9"},
      {"allreduce,0,18446744073709551616,ring,ll,0,1,8\n", "larger than 18446744073709551615"},
      {"allreduce,-3,1,ring,ll,0,1,8\n", "column 'min_bytes': '-3' is not a byte count"},
      {"allreduce,0,1,ring,ll,08,1,8\n", "column 'channels': '08' is not -1 or a decimal count"},
      {"allreduce,0,1,ring,ll,0,0,8\n", "column 'nNodes': 0 nodes"},
      {"allreduce,0,1,ring,ll,0,1\n", "t.conf:1: 7 fields; a rule has 8 to 10"},
      {"allreduce,0,1,ring,ll,0,1,8,1,2\n", "column 'regBuff': '2' is not -1, 0 or 1"},
      {"# only comments\n", "t.conf: no rule"},
  };
  for (const auto& [text, want] : bad) {
    try {
      read_tuner_rules(text, "t.conf");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const arfit::InputError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << text << " -> " << e.what();
    }
  }
}
