#include "trace/whatif.h"

#include <cstdio>
#include <sstream>
#include <stdexcept>

#include "model/sample_csv.h"

namespace arfit::trace {

namespace {
std::string fmt(double v, const char* f = "%.3f") {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
}  // namespace

WhatIfResult what_if(const Profile& profile, const RuleTable& rules, const WhatIfOptions& opt, const Predictor& predict) {
  if (opt.tp <= 0) throw std::invalid_argument("--tp must be a positive rank count");
  int dsize = dtype_size(opt.dtype);
  if (dsize <= 0) throw std::invalid_argument("unknown dtype '" + opt.dtype + "'");
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
      CollectiveWhatIf cw;
      cw.phase = ph.name;
      cw.kernel = l.name;
      cw.class_id = c->id;
      cw.invocations = l.invocations;
      cw.measured_us = l.time_us;
      ++r.recognised;
      if (!c->collective || c->strategy.empty()) {
        cw.how = "not re-predicted: class '" + c->id + "' names no collective/strategy (kept as measured)";
        cw.predicted_us = cw.lo_us = cw.hi_us = l.time_us;
        r.collectives.push_back(cw);
        pw.comm_predicted_us += l.time_us;
        pw.comm_lo_us += l.time_us;
        pw.comm_hi_us += l.time_us;
        continue;
      }
      // Message size: what the profile recorded, else tokens x hidden x dtype size.
      const ProfileNode* n = l.node;
      std::string dtype = (n && !n->dtype.empty()) ? n->dtype : opt.dtype;
      int ds = dtype_size(dtype) > 0 ? dtype_size(dtype) : dsize;
      PredictQuery q;
      if (n && n->bytes > 0) {
        cw.bytes = n->bytes;
        cw.bytes_from = "recorded bytes";
      } else if (n && n->shape_tokens > 0) {
        cw.bytes = static_cast<double>(n->shape_tokens) * static_cast<double>(n->shape_hidden) * ds;
        q.tokens = n->shape_tokens;
        q.hidden = n->shape_hidden;
        cw.bytes_from = "recorded shape";
      } else if (opt.hidden > 0 && tokens > 0) {
        cw.bytes = static_cast<double>(tokens) * static_cast<double>(opt.hidden) * ds;
        q.tokens = tokens;
        q.hidden = opt.hidden;
        cw.bytes_from = "tokens x --hidden";
      } else {
        missing_size.push_back(ph.name + ": " + shorten_name(l.name, 60) +
                               (opt.hidden > 0 ? " (the phase's token count is unknown: pass --tokens or --batch-size/--prompt-len)"
                                               : " (pass --hidden)"));
        continue;
      }
      q.system = opt.system;
      q.collective = *c->collective;
      q.strategy = (!opt.strategy.empty() && q.collective == Collective::AllReduce) ? opt.strategy : c->strategy;
      q.fusion = c->fusion;
      q.dtype = canonical_dtype(dtype);
      q.nranks = opt.tp;
      q.nnodes = opt.nnodes;
      q.sm = opt.sm;
      q.bytes = cw.bytes;
      cw.query = to_string(q.collective) + "/" + q.strategy + "/" + to_string(q.fusion) + "/" + q.dtype +
                 " n=" + std::to_string(q.nranks) + (q.sm ? " sm=" + std::to_string(q.sm) : "") +
                 " bytes=" + fmt(q.bytes, "%.0f");
      auto p = predict(q);
      if (!p)
        throw std::runtime_error("the model set cannot predict " + cw.query + " (needed for " + shorten_name(l.name, 60) +
                                 " in phase " + ph.name + "); fit a model for it or choose --system/--strategy");
      double k = static_cast<double>(std::max<std::int64_t>(l.invocations, 1));
      cw.predicted_us = k * p->time_us;
      cw.lo_us = k * p->lo_us;
      cw.hi_us = k * p->hi_us;
      cw.extrapolated = p->extrapolated;
      cw.how = p->how;
      cw.repredicted = true;
      ++r.repredicted;
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
    << " re-predicted; compute kernels keep their measured time\n\n";
  char line[512];
  std::string predicted_head = "predicted at TP=" + std::to_string(opt.tp) + (opt.sm ? " SM" + std::to_string(opt.sm) : "") +
                               ", [90% interval]";
  std::snprintf(line, sizeof line, "%-14s %10s | %-20s | %s\n", "", "", "measured", predicted_head.c_str());
  o << line;
  std::snprintf(line, sizeof line, "%-14s %10s | %10s %9s | %10s %-16s %6s\n", "phase", "total_us", "comm_us", "comm_%", "comm_us",
                "", "comm_%");
  o << line;
  for (const auto& p : r.phases) {
    std::string interval = "[" + fmt(p.comm_lo_us, "%.1f") + ", " + fmt(p.comm_hi_us, "%.1f") + "]";
    std::string share_iv = "[" + fmt(100 * p.share_lo, "%.1f") + ", " + fmt(100 * p.share_hi, "%.1f") + "]";
    std::snprintf(line, sizeof line, "%-14s %10.1f | %10.1f %9.1f | %10.1f %-16s %6.1f %s\n", p.phase.c_str(), p.total_measured_us,
                  p.comm_measured_us, 100 * p.share_measured, p.comm_predicted_us, interval.c_str(), 100 * p.share_predicted,
                  share_iv.c_str());
    o << line;
  }
  o << "\ncollectives:\n";
  for (const auto& c : r.collectives) {
    o << "  " << c.phase << "  " << shorten_name(c.kernel, 48) << "  x" << c.invocations << "  measured " << fmt(c.measured_us, "%.1f")
      << " us";
    if (c.repredicted) {
      o << " -> " << fmt(c.predicted_us, "%.1f") << " us [" << fmt(c.lo_us, "%.1f") << ", " << fmt(c.hi_us, "%.1f") << "]  ("
        << c.query << ", size from " << c.bytes_from << (c.extrapolated ? ", extrapolated" : "") << (c.how.empty() ? "" : ", " + c.how)
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
    o << csv_escape(p.phase) << "," << to_string(p.kind) << "," << fmt(p.total_measured_us) << "," << fmt(p.comm_measured_us) << ","
      << fmt(p.comm_predicted_us) << "," << fmt(p.comm_lo_us) << "," << fmt(p.comm_hi_us) << "," << fmt(100 * p.share_measured, "%.2f")
      << "," << fmt(100 * p.share_predicted, "%.2f") << "," << fmt(100 * p.share_lo, "%.2f") << "," << fmt(100 * p.share_hi, "%.2f")
      << "\n";
  return o.str();
}

}  // namespace arfit::trace
