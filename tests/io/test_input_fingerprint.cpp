// io/input_file.h input_fingerprint: the fingerprint a models file records for an input is of the bytes this
// process read, also when the path names another file by the time it is recorded.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>

#include "io/input_file.h"
#include "model/text.h"
#include "test_support.h"

using namespace arfit;

// A file renamed over the input after it was read (an editor's save, another arfit's atomic write) is a new
// inode: its fingerprint is not what was read, and hashing it again recorded a version the run never saw.
TEST(InputFingerprint, IsOfTheBytesReadWhenTheFileIsReplacedAfterwards) {
  arfit::testing::TempDir dir;
  const std::string read_version = "#arfit-samples v1\ncollective,strategy,nranks,bytes,time_us\nallreduce,NCCL,2,8,10\n";
  const std::string path = dir.write("samples.csv", read_version);
  ASSERT_EQ(read_input_file(path), read_version);
  const std::string newer = dir.write("samples.csv.new", read_version + "allreduce,NCCL,2,16,11\n");
  ASSERT_EQ(std::rename(newer.c_str(), path.c_str()), 0);
  EXPECT_EQ(input_fingerprint(path), fnv1a64_hex(read_version));
  // A file never read is fingerprinted as it is now, also when it got the inode number of a file read and
  // deleted since (file systems hand freed numbers out again: the old samples.csv's here, on most).
  const std::string other = dir.write("other.csv", "x\n");
  EXPECT_EQ(input_fingerprint(other), fnv1a64_hex("x\n"));
}

// Another name of a file read (./x, a link) finds what was read through the first, while it names that file.
TEST(InputFingerprint, AnotherNameOfTheFileReadFindsTheBytesRead) {
  arfit::testing::TempDir dir;
  const std::string path = dir.write("s.csv", "first\n");
  ASSERT_EQ(read_input_file(path), "first\n");
  dir.write("s.csv", "rewritten in place\n");  // same inode, other bytes
  EXPECT_EQ(input_fingerprint(dir.path().string() + "/./s.csv"), fnv1a64_hex("first\n"));
}
