// The inter-node network a log or the user states (model/stated_network.h): the option's form, and the statement
// found in a hardware description's free text, as the public logs' headers spell it.
#include <gtest/gtest.h>

#include <optional>
#include <string>

#include "model/stated_network.h"

using namespace arfit;

namespace {

// rails x GB/s per rail of a parse, or {0, 0} when nothing was read.
std::pair<int, double> read(const std::optional<StatedNetwork>& n) {
  return n ? std::make_pair(n->rails, n->rail_gbps) : std::make_pair(0, 0.0);
}

}  // namespace

// Bits unless the B is upper case, bits when no unit is given (NICs are sold so), spaces anywhere between the parts.
TEST(StatedNetwork, OptionFormReadsRailsAndBandwidth) {
  EXPECT_EQ(read(parse_stated_network("8x400Gb")), std::make_pair(8, 50.0));
  EXPECT_EQ(read(parse_stated_network("8x400")), std::make_pair(8, 50.0));
  EXPECT_EQ(read(parse_stated_network("8x400G")), std::make_pair(8, 50.0));
  EXPECT_EQ(read(parse_stated_network("8 X 400 Gbps")), std::make_pair(8, 50.0));
  EXPECT_EQ(read(parse_stated_network("8x400Gb/s")), std::make_pair(8, 50.0));
  EXPECT_EQ(read(parse_stated_network("8x400Gbit")), std::make_pair(8, 50.0));
  EXPECT_EQ(read(parse_stated_network("8x50GB/s")), std::make_pair(8, 50.0));
  EXPECT_EQ(read(parse_stated_network(" 8x 50GBps ")), std::make_pair(8, 50.0));
  EXPECT_EQ(read(parse_stated_network("32x12.5GB/s")), std::make_pair(32, 12.5));
  EXPECT_DOUBLE_EQ(parse_stated_network("32x100Gbps")->node_gbps(), 400.0);
  // The canonical form reads back to the same network.
  const StatedNetwork n = *parse_stated_network("4x100 Gbps");
  EXPECT_EQ(to_string(n), "4x12.5GB/s");
  EXPECT_EQ(read(parse_stated_network(to_string(n))), std::make_pair(4, 12.5));
}

TEST(StatedNetwork, OptionFormRefusesWhatIsNotANetwork) {
  for (const char* bad : {"", "8", "x400G", "8x", "8xG", "0x400G", "2.5x400G", "8x0G", "8x400GPUs", "8x400G extra",
                          "eight x 400G", "2000x400G", "8x1e9GB/s", "-8x400G", "8x-400G"}) {
    EXPECT_FALSE(parse_stated_network(bad).has_value()) << bad;
  }
}

// The public logs' HARDWARE lines, as ingest meets them: the network clause's statement, never a GPU count or an
// NVLink figure.
TEST(StatedNetwork, FoundInAHardwareDescription) {
  EXPECT_EQ(read(find_stated_network("HARDWARE: AWS P6-B200 (p6-b200.48xlarge): 8x NVIDIA B200 per node, NVLink 5 "
                                     "intra-node, 8x 50GBps EFA v4 inter-node. Column \"1 node\" = 8 GPUs")),
            std::make_pair(8, 50.0));
  EXPECT_EQ(read(find_stated_network("HARDWARE: 2x AWS p5.48xlarge = 2 nodes x 8 NVIDIA H100 80GB HBM3 (NVLink4/NVSwitch "
                                     "intra-node; inter-node EFA v2 32x100 Gbps = 3200 Gbps/node, aws-ofi-nccl)")),
            std::make_pair(32, 12.5));
  EXPECT_EQ(read(find_stated_network("2 nodes x 8 NVIDIA A100 40GB SXM4 (NVLink3/NVSwitch intra-node; inter-node 8x 200 "
                                     "Gb/s HDR InfiniBand per node)")),
            std::make_pair(8, 25.0));
  EXPECT_EQ(read(find_stated_network("(NVLink/NVSwitch intra-node; inter-node GPUDirect-TCPXO over 8x200Gb NICs)")),
            std::make_pair(8, 25.0));
  // No statement: a network without its figures, GPU counts, an NVLink clause with a figure.
  EXPECT_FALSE(find_stated_network("2 nodes x 8 NVIDIA A100-SXM4-40GB (inter-node RDMA RoCE via mlx5 NICs)"));
  EXPECT_FALSE(find_stated_network("8x NVIDIA H100 80GB HBM3, NVLink4 18x 25GB/s per GPU"));
  EXPECT_FALSE(find_stated_network("nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor)"));
  EXPECT_FALSE(find_stated_network("network: 8 x NVIDIA GPUs"));
}
