// What-if: re-predict the communication of a profile at another tensor-parallel size (and SM). Each kernel
// leaf whose class is a recognised collective (a class with a collective and a strategy in the rule table)
// gets its measured time replaced by invocations x the model's prediction at the new rank count for the same
// message size; everything else keeps its measured time. The prediction comes through an injected function
// so the logic is testable without a fitted model set (the CLI passes ModelSet::predict).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "model/model_set.h"
#include "trace/breakdown.h"
#include "trace/classify.h"
#include "trace/profile.h"

namespace arfit::trace {

using Predictor = std::function<std::optional<Prediction>(const PredictQuery&)>;
// Why the predictor has no answer for a query it refuses (ModelSet::across_nodes_refusal); empty when it refuses none.
using Refusal = std::function<std::string(const PredictQuery&)>;

struct WhatIfOptions {
  int tp = 0;          // new rank count (required, > 0)
  int sm = 0;          // 0: the models' measured SM
  int nnodes = 1;
  std::string system;  // model-set system; empty: the only one
  std::string dtype = "bf16";  // the activations' element type, when neither the profile nor the kernel name says
  std::int64_t hidden = 0;  // for message sizes: tokens x hidden x dtype size when no shape was recorded
  std::int64_t tokens = 0;  // overrides every phase's token count when > 0
  std::string strategy;     // overrides the strategy of every all-reduce ("NCCL", "ONESHOT", ...); empty: as measured
  std::vector<std::string> fold;
};

// Why a communication kernel keeps its measured time.
enum class KeptBecause {
  Repredicted,      // not kept: re-predicted
  NoCollective,     // its class names no collective/strategy (NCCL SendRecv, MoE dispatch/combine, ...)
  Synchronisation,  // a small all-reduce of counters or flags, not tensor-parallel activations
  NoModel,          // the model set has no curve for its query, nor for a dtype of the same element size
  NotAcrossNodes,   // its strategy is not shown to run on the query's nodes (ModelSet::across_nodes_refusal)
};

struct CollectiveWhatIf {
  std::string phase;
  std::string kernel;
  std::string class_id;
  std::string query;      // "allreduce/NCCL/NONE/bf16 n=8 sm=100"
  std::int64_t invocations = 0;
  double bytes = 0;
  std::string bytes_from;  // "recorded bytes", "recorded shape", "tokens x --hidden"
  std::string dtype;       // element type of the query
  std::string dtype_from;  // "profile" (recorded with the node), "kernel name", "--dtype"
  double measured_us = 0;
  double predicted_us = 0, lo_us = 0, hi_us = 0;  // totals over the invocations
  bool repredicted = false;
  KeptBecause kept = KeptBecause::Repredicted;
  bool extrapolated = false;
  std::string how;   // the model's note (with a dtype fallback said), or why it was not re-predicted
};

struct PhaseWhatIf {
  std::string phase;
  PhaseKind kind = PhaseKind::Other;
  double total_measured_us = 0;
  double comm_measured_us = 0;
  double comm_predicted_us = 0, comm_lo_us = 0, comm_hi_us = 0;  // communication after replacement
  double share_measured = 0, share_predicted = 0, share_lo = 0, share_hi = 0;  // fractions of the phase's time
};

struct WhatIfResult {
  int measured_tp = 0;
  int recognised = 0;   // communication kernel leaves found (all phases)
  int repredicted = 0;  // of which re-predicted; the others keep their measured time (CollectiveWhatIf::kept)
  std::vector<CollectiveWhatIf> collectives;
  std::vector<PhaseWhatIf> phases;
};

// The element type of a collective: recorded with the node, else where NCCL names it in the kernel
// ("AllReduce_Sum_bf16"), else opt.dtype. A query the predictor cannot answer is retried with the other dtypes of
// the same element size (bf16 <-> fp16, ...), saying so; when none answers the collective keeps its measured time
// (KeptBecause::NoModel), or, when `refusal` names why the predictor refuses it (a custom all-reduce on more nodes
// than any machine measured it on), KeptBecause::NotAcrossNodes with that reason. Small all-reduces that
// synchronise (integer types, a Max/Min/Prod op, fp32 in a 16-bit model, a recorded size of at most
// kSyncAllReduceMaxBytes) keep theirs too (KeptBecause::Synchronisation).
// Throws std::invalid_argument when tp <= 0 or a collective to re-predict has no known message size (no
// recorded size and no --hidden / phase tokens).
WhatIfResult what_if(const Profile& profile, const RuleTable& rules, const WhatIfOptions& opt, const Predictor& predict,
                     const Refusal& refusal = {});

// A recorded all-reduce this small (bytes) is synchronisation, not activations: 256 fp32 counters.
inline constexpr double kSyncAllReduceMaxBytes = 1024;

// Human-readable report; says plainly when there was nothing to re-predict.
std::string format_what_if(const WhatIfResult& r, const Profile& profile, const WhatIfOptions& opt);
// CSV: phase,kind,total_measured_us,comm_measured_us,comm_predicted_us,comm_lo_us,comm_hi_us,share_measured_pct,share_predicted_pct,share_lo_pct,share_hi_pct
std::string what_if_phases_csv(const WhatIfResult& r);

}  // namespace arfit::trace
