// The one-shot kernel's PTX (nvcc --ptx, produced by the build: kernels/CMakeLists.txt target
// arfit_kernels_ptx) must move data in 16-byte vectors: ld.global.nc.v4 for the read-only input,
// ld.global.v4 for the peers' staging buffers, st.global.v4 for staging and output; and it must contain the
// release/acquire barrier. Checked for every instantiation (2/4/8 ranks x the 6 fusion ops: NONE, RESIDUAL_RMS_NORM, the QUANT and OUT_QUANT ops for FP8 and NVFP4).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::string read_ptx() {
  std::ifstream in(ARFIT_ONE_SHOT_PTX);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Entry {
  std::string name, body;
};

// Splits the PTX into its .entry functions.
std::vector<Entry> entries(const std::string& ptx) {
  std::vector<Entry> out;
  std::size_t at = ptx.find(".entry ");
  while (at != std::string::npos) {
    const std::size_t next = ptx.find(".entry ", at + 7);
    const std::size_t name_end = ptx.find_first_of("( \n", at + 7);
    out.push_back({ptx.substr(at + 7, name_end - at - 7), ptx.substr(at, (next == std::string::npos ? ptx.size() : next) - at)});
    at = next;
  }
  return out;
}

TEST(KernelPtx, OneShotKernelUses128BitLoadsAndStores) {
  const std::string ptx = read_ptx();
  ASSERT_FALSE(ptx.empty()) << "cannot read " << ARFIT_ONE_SHOT_PTX;
  int one_shot_entries = 0;
  for (const Entry& e : entries(ptx)) {
    if (e.name.find("one_shot_all_reduce_kernel") == std::string::npos) continue;
    ++one_shot_entries;
    EXPECT_NE(e.body.find("ld.global.nc.v4.u32"), std::string::npos) << e.name << ": no 128-bit read-only load";
    EXPECT_NE(e.body.find("ld.global.v4.u32"), std::string::npos) << e.name << ": no 128-bit coherent load";
    EXPECT_NE(e.body.find("st.global.v4.u32"), std::string::npos) << e.name << ": no 128-bit store";
    EXPECT_NE(e.body.find("st.release.sys.global.u32"), std::string::npos) << e.name << ": no release flag store";
    EXPECT_NE(e.body.find("ld.acquire.sys.global.u32"), std::string::npos) << e.name << ": no acquire flag load";
  }
  EXPECT_EQ(one_shot_entries, 18) << "expected 3 rank counts x 6 fusion ops";
}

}  // namespace
