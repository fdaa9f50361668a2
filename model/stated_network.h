// The inter-node network a log or the user states: the rails (NICs) a node drives and one rail's bandwidth (issue
// 41). Published multi-node logs say it in their header in a few spellings ("8x 50GBps EFA v4", "8x200Gb NICs",
// "32x100 Gbps", "8x 200 Gb/s HDR InfiniBand"); `arfit ingest --network 8x400Gb` states it for a log that does not.
// A sample carries it as Sample::extra["network"] in the canonical form ("8x50GB/s"), a models file's group as
// "network"; model/scale_out.h reads it where other machines lend a step across nodes.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace arfit {

struct StatedNetwork {
  int rails = 0;          // NICs per node
  double rail_gbps = 0;   // one rail's bandwidth, GB/s (bytes: a 400 Gb/s NIC is 50)
  // The bandwidth a node reaches the network with, GB/s: every rail's. A GPU drives the rails near it, several
  // where a node has more rails than GPUs (AWS p5: 32 EFA NICs for 8 GPUs, four each), so a full node's bandwidth is
  // the rails' whatever its GPU count.
  double node_gbps() const { return rails * rail_gbps; }
};

// Bounds of a statement: up to 1024 rails of up to 100 TB/s each.
inline constexpr int kMaxStatedRails = 1024;
inline constexpr double kMaxStatedRailGBps = 1e5;

// "RAILSxBANDWIDTH[UNIT]", case-insensitive, spaces allowed around the x and before the unit: "8x50GB/s",
// "8x 50GBps", "8x400G", "32x100 Gbps", "8 x 200 Gb/s". Units: GB/s, GBps (bytes); Gb/s, Gbps, Gb, G (bits, as NICs
// are sold; the default). nullopt when `text` is not that, or out of bounds.
std::optional<StatedNetwork> parse_stated_network(std::string_view text);

// The network a free-text hardware description states, if it states one: the first RAILSxBANDWIDTH (as
// parse_stated_network reads it, with a unit) in a clause — text between ',', ';', '(' and ')' — that names a
// network (EFA, InfiniBand, IB, RoCE, NIC, HCA, Slingshot, TCPX, Ethernet, inter-node, network) and no intra-node
// link (NVLink, NVSwitch, PCIe). A GPU count ("8x NVIDIA B200") has no bandwidth unit, an NVLink clause is skipped.
std::optional<StatedNetwork> find_stated_network(std::string_view text);

// The canonical form, "8x50GB/s" (%g of the bandwidth), which parse_stated_network reads back.
std::string to_string(const StatedNetwork& n);

}  // namespace arfit
