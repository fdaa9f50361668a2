// Across node boundaries: a GPU count on more nodes than any count its machine measured (docs/fit.md, "Across
// node boundaries"). The inter-node network is in none of the machine's own measurements, so the answer comes
// from other machines' scale-out steps when a models file (or crossn's training data) holds some, and otherwise
// stays the joint-n guess, marked extrapolated, with an interval as wide as the unknown network. Shared by
// `arfit predict` (ModelSet::predict) and `arfit eval --protocol crossn`.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/group_model.h"
#include "model/model_set.h"

namespace arfit {

struct JointModel;  // model/joint_model.h

// Same collective, strategy, fusion and element size (dtype_size): the same measurement, at any rank and node
// count.
bool comparable_kinds(const GroupKey& a, const GroupKey& b);
// comparable_kinds at the same rank and node count: curves of two machines that measure the same thing (a
// transfer's sources, a scale-out step's ends).
bool comparable_curves(const GroupKey& a, const GroupKey& b);
// The kinds a scale-out step may pass between: the same collective, strategy and fusion, any element type. A
// step is the ratio of two times at the same bytes; the element type changes the reduction's arithmetic, not the
// bytes that cross the network (the public H100 tables at equal bytes: fp32 against int8 within ±20 %, where
// networks differ up to 4×), and a bus-bandwidth table rarely states its type. Where a machine measured several,
// plan_scale_out_lenders takes the target's.
bool comparable_steps(const GroupKey& a, const GroupKey& b);

// Bandwidth per GPU assumed for the network when nothing measured it: a 400 Gb/s NIC per GPU, the class of the
// public multi-node measurements (EFA, InfiniBand NDR, RoCE).
inline constexpr double kNetworkGBps = 50;

// Half-width (log) of an unknown network's step: ln(datasheet interconnect / kNetworkGBps), the most the
// bandwidth term can fall from the intra-node link to the network's, or ln 10 when the SM is not in the table.
double cross_node_half_width(int sm);

// Which machines lend a target their scale-out step: those whose intra-node fabric has the target's datasheet
// bandwidth (model/sm_targets.h), when the target's SM is in the table and any lender matches; else all. A step
// ln t(more nodes) − ln t(one node) has the intra-node fabric in its second term: only machines with the same
// fabric show the difference of networks alone (an H100's NVLink 4 step is not an A100's). Indices into
// `lender_sms`, ascending.
std::vector<std::size_t> same_fabric_lenders(const std::vector<int>& lender_sms, int target_sm);

// A lender's step ln t(more nodes) − ln t(one node) as the target's intra-node fabric would show it: the network
// term is taken as the lender's, the one-node term's bandwidth share (1 − λ of the target's count, λ its latency
// share at `bytes`) scales with the datasheet bandwidths, so the step grows by (1 − λ)·ln(target / lender
// bandwidth). A B200 node (NVLink 5) is twice as fast as an H100 node at large sizes and reaches the same network,
// so its step is twice the H100's there. A slower fabric shrinks the step to 0 at most (to the lender's own step
// when that was below 0): the ring across nodes still runs through the target's fabric, so crossing nodes does not
// make a PCIe node faster than its own one-node time (an L40S node from H100 lenders: ln(32 / 450) would have put
// 16 GPUs on two nodes 7x below 8 on one). The step as is when either SM is not in the table (and for lenders of
// the target's fabric, where the term is 0).
double fabric_adjusted_step(double step, int lender_sm, int target_sm, const GroupModel& target_count, double bytes);

// A lender's step as the target's stated network would show it (issue 41): where both state their network
// (GroupModel::network: a log's header or `arfit ingest --network`), the step's network bandwidth term is the
// target's, so the step falls by (1 − λ)·ln(target's / lender's node bandwidth), λ the latency share of the
// lender's multi-node curve `lender_network` at `bytes` (the bandwidth share is what a faster network shortens), each
// node's bandwidth its rails × one rail's (StatedNetwork::node_gbps).
// Networks differ up to 4x in bandwidth (the public 2-node logs), more than any other term of a step. A faster
// network shrinks the step to 0 at most (to the lender's own step when that was below 0): crossing nodes does not
// make a machine faster than its one-node time. The step as is when either side states no network
// (states_networks false).
bool states_networks(const GroupModel& lender_network, const GroupModel& target_count);
double network_adjusted_step(double step, const GroupModel& lender_network, const GroupModel& target_count, double bytes);

// Pseudo-machines the unknown network's spread counts as in new_machine_half_width: one, the least that keeps
// agreeing lenders from narrowing the interval below what a new kind of network needs.
inline constexpr double kPriorMachines = 1;

// Half-width (log) of the step of a machine whose network nothing measured, from the steps other machines
// measured: the target is one more draw from their networks, so the prediction interval of a new value from n
// values — Student's t × the deviation × sqrt(1 + 1/n) — with the deviation pooled with a prior one, the unknown
// network's (cross_node_half_width(sm) / z90, weighing kPriorMachines machines; kPriorMachines + n − 1 degrees
// of freedom); at most the width of knowing nothing, cross_node_half_width(sm); one machine says nothing about
// how networks differ: that width.
double new_machine_half_width(const std::vector<double>& steps, int sm);

// The largest measured count's prediction carried by other machines' scale-out steps at one size (each
// ln t(target count, target nodes) − ln t(that count, its nodes)): their median; the interval adds, in
// quadrature, the count's own, new_machine_half_width, kJointSigmaPerDoubling per doubling of GPUs and
// `bridge_half_width` (bridged steps' carry, below; 0 for measured steps).
Prediction scale_out_by_prior(const Prediction& largest_measured, const std::vector<double>& steps, double doublings, int sm,
                              double bridge_half_width = 0);

// A lender's step to a count it did not measure, bridged through its own network: it measured the machine's
// count on one node (its time at `bytes`, `one_node_log_us` = ln µs) and other counts on more than one node
// (`lender_multi_node`, each at most the target's count and nodes), so its own network carried to the target
// (carry_within_network) over its one-node time is its step. A user's 8-GPU node asked for 32 GPUs on 4 nodes
// borrows that way from a cluster that measured 8 on one node and 16 on two. `half_width`: the carry's 90 %
// half-width (log), for the interval.
struct BridgedStep {
  double log_step = 0;
  double half_width = 0;
};
BridgedStep bridged_step(double one_node_log_us, const std::vector<GroupModel>& lender_multi_node, int nranks, int nnodes,
                         double bytes);

// A machine that measured its network (a count on more than one node) asked for a count on more nodes still:
// carried within that network from `multi_node`, its measured counts on more than one node (any order, at most
// the asked count). Two or more: the joint-n rule on them (their trend is the network's; a trend that crosses
// from one node to several is not). One, count c: its bus bandwidth held — nccl-tests' bus bandwidth does not
// depend on the rank count where one link bounds it, here the network — and its latency share λ between
// unchanged and grown with the ring's peers, (n − 1)/(c − 1): the geometric middle of the two, the interval
// spanning both, in quadrature with c's own and kJointSigmaPerDoubling per doubling of GPUs or of nodes.
// Extrapolated; `how` says "within the measured network". Throws std::invalid_argument on an empty list.
Prediction carry_within_network(const std::vector<GroupModel>& multi_node, int nranks, int nnodes, double bytes);

// A curve of another machine, as lenders are planned before anything is fitted.
struct LenderCurve {
  GroupKey key;        // key.system: the machine that measured it
  int sm = 0;          // datasheet SM (datasheet_sm); 0 unknown
  std::string device;  // the GPU's name as the measurement reported it; empty unknown
};

// A machine that may lend a one-node machine its scale-out step, as indices into the planner's pool: its network
// — the asked count on the asked nodes (`to`: a measured step) or counts on more than one node within them
// (`network`: a step bridged through its own network) — and the machine's count on one node (`from`). `from` is
// the lender's own; where the lender measured no such count it is `paired`: that count of every other machine
// whose GPU is the lender's (gpu_model_name: the name without its memory; an SM is not enough, an A100 on PCIe
// and one on NVLink are both SM 80, and a one-node time has the fabric in it). Published logs are filed a configuration each, so a cluster's
// two-node log and a one-node log of the same GPU arrive as two machines; paired, they make the step neither
// could lend alone.
struct LenderPlan {
  std::string system;
  int sm = 0;
  std::vector<std::size_t> from;
  std::optional<std::size_t> to;
  std::vector<std::size_t> network;
  bool paired = false;
};

// The lenders of a step from the machine's count `largest` (on one node; its key.system is the machine, whose
// own curves never lend) to `target` (the same kind on more nodes), `target_sm` the machine's datasheet SM.
// Steps pass between comparable_steps kinds, each machine's curves of one element size: the target's where it
// measured that, else the first it measured. Of the candidates, in this order: those with the machine's
// intra-node fabric when any (same_fabric_lenders); of those, the ones with their own one-node count when any,
// paired ones otherwise; of those, measured steps when any, bridged ones otherwise. One plan per lending
// machine, in name order. `arfit predict` and crossn plan alike, before fitting anything.
std::vector<LenderPlan> plan_scale_out_lenders(const std::vector<LenderCurve>& pool, const GroupKey& largest,
                                               const GroupKey& target, int target_sm);

// A planned lender with its curves fitted (LenderPlan's fields as models).
struct ScaleOutLender {
  std::string system;
  int sm = 0;  // datasheet SM (datasheet_sm)
  std::vector<GroupModel> from;
  std::optional<GroupModel> to;
  std::vector<GroupModel> network;
  bool paired = false;
};

// The machine's largest measured count `largest` (on one node; SM `sm`) carried to `nranks` GPUs on `nnodes`
// nodes at one size by `lenders` as plan_scale_out_lenders chose them (at least one): each lender's step, measured
// or bridged, from its one-node time (its own, or the paired machines' median), carried to the machine's fabric
// (fabric_adjusted_step) and to its stated network (network_adjusted_step), then scale_out_by_prior with the lenders' median half-width of what their steps add
// (a bridged step's carry; paired machines' half range, in quadrature). At each size only the lenders whose network
// measured down to it lend, else those nearest to it within an octave: below a lender's sizes its step is its
// curve's guess at a latency it never measured (above them the tail is the bandwidth line). `how` names the lenders when
// `name_lenders` (`arfit predict`; crossn's points keep the count alone) and says when the steps were bridged or
// paired. Throws std::invalid_argument on no lender or a lender without a one-node count.
Prediction scale_out_by_lenders(const GroupModel& largest, int sm, const std::vector<ScaleOutLender>& lenders,
                                int nranks, int nnodes, double bytes, bool name_lenders);

// One measured count on one node (`count`), and nothing that measured a network: the count's bus bandwidth held
// and its latency share between unchanged and grown with the ring's peers (the within-network rule for one
// count, carry_within_network), then widened across nodes (widen_across_nodes).
Prediction one_count_across_nodes(const GroupModel& count, int nranks, int nnodes, double bytes, int sm);

// What `how` says of an answer across nodes that no machine lent a step: its interval is an unknown network's.
inline constexpr const char* kNoMultiNodePrior = "(no multi-node prior)";

// A joint-n answer on the measured node count kept across nodes: extrapolated, its interval widened in
// quadrature by cross_node_half_width(sm), `how` saying so (kNoMultiNodePrior).
Prediction widen_across_nodes(Prediction joint_answer, int sm);

// `p` held at least at `floor`: where floor's time is above p's, p takes it, its interval reaching floor's upper
// end, and `held` is appended to its `how`. The one rule by which an answer on more nodes or GPUs is kept from
// falling below an answer on fewer (joint_across_nodes, ModelSet::predict across nodes).
void hold_at_least(Prediction& p, const Prediction& floor, const std::string& held);

// `joint`'s answer for `nranks` GPUs, on more nodes than `largest` (the machine's largest measured count, at most
// `nranks`, on fewer nodes) and nothing measured of a network: at least `largest`'s own time, then widened
// (widen_across_nodes). More GPUs across a node boundary move at least as much per GPU through the node's links
// and the network beside them; the joint-n trend is the one node's, where a faster algorithm at the larger count
// (NVLS) may make time fall with the count, and carried across nodes it put the public 8-GPU tables' 16 GPUs on
// two nodes up to 2.4 % below their 8 on one.
Prediction joint_across_nodes(const JointModel& joint, const GroupModel& largest, int nranks, double bytes, int sm);

}  // namespace arfit
