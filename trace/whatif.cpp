#include "trace/whatif.h"

#include <cstdio>
#include <map>
#include <sstream>
#include <stdexcept>
#include <tuple>

#include "model/sample_csv.h"
#include "model/text.h"

namespace arfit::trace {

namespace {
bool is_integer_dtype(const std::string& d) {
  return d == "int8" || d == "uint8" || d == "int32" || d == "uint32" || d == "int64" || d == "uint64";
}

// The element type of a collective and where it came from: recorded with the node, named by the kernel
// (NCCL: "AllReduce_Sum_bf16"), else --dtype. A name's type arfit cannot size (fp4) yields to --dtype.
std::pair<std::string, std::string> collective_dtype(const ProfileNode* n, const KernelNameFacts& facts, const WhatIfOptions& opt) {
  if (n && !n->dtype.empty() && dtype_size(n->dtype) > 0) return {canonical_dtype(n->dtype), "profile"};
  if (!facts.dtype.empty() && dtype_size(facts.dtype) > 0) return {facts.dtype, "kernel name"};
  return {canonical_dtype(opt.dtype), "--dtype"};
}

// Why an all-reduce is synchronisation (counters, flags, a few bytes) rather than tensor-parallel activations;
// "" when it is not. Activations are all-reduced with Sum in the model's 16- or 8-bit type (or fp32 in an fp32
// model); integer types, Max/Min/Prod, and fp32 in a lower-precision model are bookkeeping.
std::string synchronisation_reason(const OpClass& c, const KernelNameFacts& facts, double recorded_bytes, const WhatIfOptions& opt) {
  if (!c.collective || *c.collective != Collective::AllReduce) return "";
  if (recorded_bytes > 0 && recorded_bytes <= kSyncAllReduceMaxBytes)
    return format_number(recorded_bytes, "%.0f") + "-byte all-reduce recorded";
  if (is_integer_dtype(facts.dtype)) return facts.dtype + " all-reduce (an integer counter or flag)";
  if (facts.reduce_op == "Max" || facts.reduce_op == "Min" || facts.reduce_op == "Prod" || facts.reduce_op == "MinMax")
    return facts.reduce_op + " all-reduce";
  std::string activations = canonical_dtype(opt.dtype);
  if (facts.dtype == "fp32" && dtype_size(activations) < 4 && recorded_bytes == 0)
    return "fp32 all-reduce in a " + activations + " model (counters or statistics)";
  return "";
}

std::string query_text(const PredictQuery& q) {
  return to_string(q.collective) + "/" + q.strategy + "/" + to_string(q.fusion) + "/" + q.dtype + " n=" + std::to_string(q.nranks) +
         (q.sm ? " sm=" + std::to_string(q.sm) : "") + " bytes=" + format_number(q.bytes, "%.0f");
}

// The prediction for q, else for q with a dtype of the same element size (model/'s rule: q.dtype then names the
// one used and the prediction's `how` says so); nullopt when neither answers.
std::optional<Prediction> predict_same_size(const Predictor& predict, PredictQuery& q) {
  std::string used;
  std::optional<Prediction> p = predict_same_element_size(predict, q, &used);
  if (p) q.dtype = used;
  return p;
}

// The message size the profile recorded: its bytes, else its shape x element size; 0 when it recorded neither.
double recorded_bytes(const ProfileNode* n, const std::string& dtype) {
  if (n && n->bytes > 0) return n->bytes;
  if (n && n->shape_tokens > 0) return message_bytes(static_cast<double>(n->shape_tokens), static_cast<double>(n->shape_hidden), dtype);
  return 0.0;
}

// Message size: what the profile recorded, else tokens x hidden x element size. False when unknown.
bool size_query(const ProfileNode* n, const std::string& dtype, std::int64_t tokens, const WhatIfOptions& opt, PredictQuery& q,
                std::string* from) {
  if (n && n->bytes > 0) {
    q.bytes = recorded_bytes(n, dtype);
    *from = "recorded bytes";
  } else if (n && n->shape_tokens > 0) {
    q.bytes = recorded_bytes(n, dtype);
    q.tokens = n->shape_tokens;
    q.hidden = n->shape_hidden;
    *from = "recorded shape";
  } else if (opt.hidden > 0 && tokens > 0) {
    q.bytes = message_bytes(static_cast<double>(tokens), static_cast<double>(opt.hidden), dtype);
    q.tokens = tokens;
    q.hidden = opt.hidden;
    *from = "tokens x --hidden";
  } else {
    return false;
  }
  // The models' size bound (model/sample.h), as predict and codegen hold their queries to it: a recorded shape of
  // 2^63 x 2^63 was predicted at 1.7e38 bytes (3.4e33 us, exit 0). A recorded shape is the profile's (bad data,
  // naming the node), tokens x --hidden the user's (usage); recorded bytes were bounded when the profile was read.
  if (q.bytes > kMaxSampleBytes) {
    const std::string what = std::to_string(q.tokens) + " x " + std::to_string(q.hidden) + " x " + dtype;
    if (*from == "recorded shape")
      throw std::runtime_error(n->where + ": " + byte_bound_problem("'shape'", what, q.bytes));
    throw std::invalid_argument(
        byte_bound_problem(opt.tokens > 0 ? "--tokens x --hidden" : "--hidden", (opt.tokens > 0 ? "" : "the phase's tokens ") + what, q.bytes));
  }
  return true;
}

void keep_measured(CollectiveWhatIf& cw, KeptBecause why, const std::string& how) {
  cw.kept = why;
  cw.how = how;
  cw.predicted_us = cw.lo_us = cw.hi_us = cw.measured_us;
}

// What is missing to size a collective, for the usage error.
std::string missing_size_hint(const Phase& ph, const WhatIfOptions& opt) {
  if (opt.hidden <= 0) return " (pass --hidden)";
  if (ph.kind == PhaseKind::Other) return " (the phase's token count is unknown: pass --tokens, the tokens per call)";
  return " (the phase's token count is unknown: pass --tokens or --batch-size/--prompt-len)";
}

}  // namespace

WhatIfResult what_if(const Profile& profile, const RuleTable& rules, const WhatIfOptions& opt, const Predictor& predict,
                     const Refusal& refusal) {
  if (opt.tp <= 0) throw std::invalid_argument("--tp must be a positive rank count");
  if (dtype_size(opt.dtype) <= 0) throw std::invalid_argument("unknown dtype '" + opt.dtype + "'");
  WhatIfResult r;
  r.measured_tp = profile.context.tensor_parallel_size;
  std::vector<std::string> missing_size;
  for (const Phase& ph : profile.phases) {
    PhaseWhatIf pw;
    pw.phase = ph.name;
    pw.kind = ph.kind;
    std::int64_t tokens = opt.tokens > 0 ? opt.tokens : ph.tokens;
    for (const Leaf& l : collect_leaves(ph, opt.fold)) {
      pw.total_measured_us += l.time_us;
      const OpClass* c = rules.classify(l.name);
      if (!c || !c->communication) continue;
      pw.comm_measured_us += l.time_us;
      ++r.recognised;
      CollectiveWhatIf cw;
      cw.phase = ph.name;
      cw.kernel = l.name;
      cw.class_id = c->id;
      cw.invocations = l.invocations;
      cw.measured_us = l.time_us;
      const ProfileNode* n = l.node;
      KernelNameFacts facts = kernel_name_facts(l.name);
      std::tie(cw.dtype, cw.dtype_from) = collective_dtype(n, facts, opt);
      const double recorded = recorded_bytes(n, cw.dtype);
      std::string sync = synchronisation_reason(*c, facts, recorded, opt);
      PredictQuery q;
      std::optional<Prediction> p;
      if (!c->collective || c->strategy.empty()) {
        keep_measured(cw, KeptBecause::NoCollective, "not re-predicted: class '" + c->id + "' names no collective/strategy (kept as measured)");
      } else if (!sync.empty()) {
        keep_measured(cw, KeptBecause::Synchronisation, "synchronisation, not tensor-parallel traffic: " + sync + " (kept as measured)");
      } else if (!size_query(n, cw.dtype, tokens, opt, q, &cw.bytes_from)) {
        missing_size.push_back(ph.name + ": " + shorten_name(l.name, 60) + missing_size_hint(ph, opt));
        continue;
      } else {
        q.system = opt.system;
        q.collective = *c->collective;
        q.strategy = (!opt.strategy.empty() && q.collective == Collective::AllReduce) ? opt.strategy : c->strategy;
        q.fusion = c->fusion;
        q.dtype = cw.dtype;
        q.nranks = opt.tp;
        q.nnodes = opt.nnodes;
        q.sm = opt.sm;
        cw.bytes = q.bytes;
        cw.query = query_text(q);
        p = predict_same_size(predict, q);
        const std::string refused = !p && refusal ? refusal(q) : "";
        if (!refused.empty()) {
          keep_measured(cw, KeptBecause::NotAcrossNodes, "not re-predicted: " + refused + " (kept as measured)");
        } else if (!p) {
          keep_measured(cw, KeptBecause::NoModel, "not re-predicted: the model set has no curve for " + cw.query +
                                                      (same_size_dtypes(cw.dtype).empty() ? "" : " nor a dtype of the same element size") +
                                                      " (kept as measured)");
        } else {
          double k = static_cast<double>(std::max<std::int64_t>(l.invocations, 1));
          cw.predicted_us = k * p->time_us;
          cw.lo_us = k * p->lo_us;
          cw.hi_us = k * p->hi_us;
          cw.extrapolated = p->extrapolated;
          cw.how = p->how;
          cw.repredicted = true;
          ++r.repredicted;
        }
      }
      pw.comm_predicted_us += cw.predicted_us;
      // Intervals add up as if fully correlated: every call of a step uses the same model, so errors share a sign.
      pw.comm_lo_us += cw.lo_us;
      pw.comm_hi_us += cw.hi_us;
      r.collectives.push_back(std::move(cw));
    }
    double rest = pw.total_measured_us - pw.comm_measured_us;
    auto share = [&](double comm) { return rest + comm > 0 ? comm / (rest + comm) : 0.0; };
    pw.share_measured = pw.total_measured_us > 0 ? pw.comm_measured_us / pw.total_measured_us : 0.0;
    pw.share_predicted = share(pw.comm_predicted_us);
    pw.share_lo = share(pw.comm_lo_us);
    pw.share_hi = share(pw.comm_hi_us);
    r.phases.push_back(pw);
  }
  if (!missing_size.empty()) {
    std::string msg = "message size unknown for " + std::to_string(missing_size.size()) +
                      " collective(s): the profile records no size for them and no tokens x hidden is available:";
    for (std::size_t i = 0; i < missing_size.size() && i < 5; ++i) msg += "\n  " + missing_size[i];
    if (missing_size.size() > 5) msg += "\n  ... and " + std::to_string(missing_size.size() - 5) + " more";
    throw std::invalid_argument(msg);
  }
  return r;
}

std::string format_what_if(const WhatIfResult& r, const Profile& profile, const WhatIfOptions& opt) {
  std::ostringstream o;
  o << "profile: " << profile.source;
  if (!profile.context.model.empty()) o << " (model " << profile.context.model << ")";
  o << "\nmeasured at TP=" << (r.measured_tp ? std::to_string(r.measured_tp) : std::string("?")) << "; what-if TP=" << opt.tp;
  if (opt.sm) o << " SM" << opt.sm;
  o << "\n";
  if (r.recognised == 0) {
    o << "no recognised collective kernel in " << profile.source
      << ": nothing to re-predict (communication stays 0 in every phase; see `arfit breakdown` for the classes found)\n";
    return o.str();
  }
  o << r.recognised << " collective kernel entr" << (r.recognised == 1 ? "y" : "ies") << " recognised, " << r.repredicted
    << " re-predicted; compute kernels keep their measured time\n";
  std::map<KeptBecause, int> kept;
  for (const auto& c : r.collectives)
    if (!c.repredicted) ++kept[c.kept];
  if (!kept.empty()) {
    o << "kept as measured:";
    const char* sep = " ";
    for (const auto& [why, count] : kept) {
      o << sep << count << (why == KeptBecause::NoModel           ? " without a model in the set"
                            : why == KeptBecause::NotAcrossNodes  ? " whose strategy no machine measured across nodes"
                            : why == KeptBecause::Synchronisation ? " synchronisation (not TP traffic)"
                                                                  : " whose class names no collective (expert dispatch/combine, send/recv, ...)");
      sep = ", ";
    }
    o << "\n";
  }
  o << "\n";
  char line[512];
  std::string predicted_head = "predicted at TP=" + std::to_string(opt.tp) + (opt.sm ? " SM" + std::to_string(opt.sm) : "") +
                               ", [90% interval]";
  std::snprintf(line, sizeof line, "%-14s %12s | %-22s | %s\n", "", "", "measured", predicted_head.c_str());
  o << line;
  std::snprintf(line, sizeof line, "%-14s %12s | %12s %9s | %12s %-26s %6s\n", "phase", "total_us", "comm_us", "comm_%", "comm_us",
                "", "comm_%");
  o << line;
  for (const auto& p : r.phases) {
    std::string interval = "[" + format_number(p.comm_lo_us, "%.1f") + ", " + format_number(p.comm_hi_us, "%.1f") + "]";
    std::string share_iv = "[" + format_number(100 * p.share_lo, "%.1f") + ", " + format_number(100 * p.share_hi, "%.1f") + "]";
    std::snprintf(line, sizeof line, "%-14s %12.1f | %12.1f %9.1f | %12.1f %-26s %6.1f %s\n", p.phase.c_str(), p.total_measured_us,
                  p.comm_measured_us, 100 * p.share_measured, p.comm_predicted_us, interval.c_str(), 100 * p.share_predicted,
                  share_iv.c_str());
    o << line;
  }
  o << "\ncollectives:\n";
  for (const auto& c : r.collectives) {
    o << "  " << c.phase << "  " << shorten_name(c.kernel, 48) << "  x" << c.invocations << "  measured " << format_number(c.measured_us, "%.1f")
      << " us";
    if (c.repredicted) {
      o << " -> " << format_number(c.predicted_us, "%.1f") << " us [" << format_number(c.lo_us, "%.1f") << ", " << format_number(c.hi_us, "%.1f") << "]  ("
        << c.query << ", size from " << c.bytes_from << (c.dtype_from == "--dtype" ? "" : ", dtype from " + c.dtype_from)
        << (c.extrapolated ? ", extrapolated" : "") << (c.how.empty() ? "" : ", " + c.how)
        << ")";
    } else {
      o << "  " << c.how;
    }
    o << "\n";
  }
  return o.str();
}

std::string what_if_phases_csv(const WhatIfResult& r) {
  std::ostringstream o;
  o << "phase,kind,total_measured_us,comm_measured_us,comm_predicted_us,comm_lo_us,comm_hi_us,share_measured_pct,"
       "share_predicted_pct,share_lo_pct,share_hi_pct\n";
  for (const auto& p : r.phases)
    o << csv_escape(p.phase) << "," << to_string(p.kind) << "," << format_number(p.total_measured_us, "%.3f") << "," << format_number(p.comm_measured_us, "%.3f") << ","
      << format_number(p.comm_predicted_us, "%.3f") << "," << format_number(p.comm_lo_us, "%.3f") << "," << format_number(p.comm_hi_us, "%.3f") << "," << format_number(100 * p.share_measured, "%.2f")
      << "," << format_number(100 * p.share_predicted, "%.2f") << "," << format_number(100 * p.share_lo, "%.2f") << "," << format_number(100 * p.share_hi, "%.2f")
      << "\n";
  return o.str();
}

}  // namespace arfit::trace
