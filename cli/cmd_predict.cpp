// arfit predict models.json --collective C --strategy S [--system X] [--fusion F] [--dtype D] [--nranks N]
//   [--nnodes N [--prior MODELS_OR_SAMPLES...]] [--sm V] (--bytes LIST|RANGE | --tokens LIST --hidden LIST |
//   --splits SPLIT...) [--json]
// Prints predicted time, bus bandwidth and the 90 % interval per size.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include "cli/cli_inputs.h"
#include "cli/commands.h"
#include "model/checked.h"
#include "model/group_model.h"
#include "model/alltoallv.h"
#include "model/bus_factor.h"
#include "model/json_input.h"
#include "model/model_set.h"
#include "model/predict_answer.h"
#include "model/scale_out.h"
#include "model/sm_targets.h"
#include "model/text.h"

namespace arfit::cli {
namespace {

struct PredictArgs {
  std::string models;
  std::string collective, strategy = "NCCL", system, fusion = "NONE", dtype;
  int nranks = 0, nnodes = 1, sm = 0;
  std::string bytes, tokens, hidden;
  std::vector<std::string> splits;
  std::vector<std::string> priors;  // other machines, lending scale-out steps only
  bool json = false;
};

// Sizes of one --bytes range at most: beyond it the request is refused (not cut short silently).
constexpr std::size_t kMaxPredictPoints = 100000;

// "4096", "64K", "1M", "2G" (binary multiples), "1.5M" (parse_size_text). Errors name `option`.
double parse_size(const std::string& s, const std::string& option) {
  std::string why;
  const std::optional<double> v = parse_size_text(s, &why);
  if (!v) throw UsageError(option + ": " + (s.empty() ? why + " (two separators in a row, or one at an end)" : why));
  // At least one byte (or one token, one element): --bytes 1e-3:1:2 printed ten rows of '0' bytes with exit 0.
  if (!(*v >= 1)) throw UsageError(option + ": size '" + s + "' must be at least 1 and finite");
  return *v;
}

// A count (tokens, hidden size): a size that is a whole number within int64, never converted by wrapping.
std::int64_t parse_count(const std::string& s, const std::string& option) {
  // Sizes are read as doubles, exact for whole numbers up to 2^53 (far beyond any token count or hidden size).
  const double v = parse_size(s, option);
  if (v > 9007199254740992.0) throw UsageError(option + ": '" + s + "' is above 2^53, the largest count arfit reads exactly");
  const auto n = checked_narrow<std::int64_t>(v);
  // parse_size refused below 1, so a miss here is a fraction: say so, not int64's range (which starts below 0).
  if (!n) throw UsageError(option + ": '" + s + "' is not a whole number (a count, at least 1)");
  return *n;
}

// LIST "a,b,c" or RANGE "A:B[:F]" (A, A·F, A·F², ... up to B; F = 2 by default).
std::vector<double> parse_sizes(const std::string& s) {
  std::vector<double> out;
  if (s.find(':') != std::string::npos) {
    const auto p = split_items(s, ':');
    if (p.size() < 2 || p.size() > 3) throw UsageError("--bytes range must be A:B or A:B:FACTOR, got '" + s + "'");
    const double a = parse_size(p[0], "--bytes"), b = parse_size(p[1], "--bytes");
    double f = 2.0;
    if (p.size() == 3) {
      std::size_t used = 0;
      try {
        f = std::stod(p[2], &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (p[2].empty() || used != p[2].size()) throw UsageError("--bytes: range factor '" + p[2] + "' is not a number");
    }
    if (!(f > 1) || !std::isfinite(f)) throw UsageError("--bytes: range factor must be a finite number > 1");
    if (b < a) throw UsageError("--bytes: range end is below its start");
    if (const std::string why = byte_bound_problem("--bytes", "range end '" + p[1] + "'", b); !why.empty()) throw UsageError(why);
    // Points of A, A·F, ... up to B: refused beyond the cap rather than cut short.
    const double points = std::floor(std::log(b * (1 + 1e-12) / a) / std::log(f)) + 1;
    if (!(points <= static_cast<double>(kMaxPredictPoints)))
      throw UsageError("--bytes: range " + s + " has more than " + std::to_string(kMaxPredictPoints) +
                       " points; use a larger factor or a narrower range");
    for (double v = a; v <= b * (1 + 1e-12) && out.size() < kMaxPredictPoints; v *= f) out.push_back(v);
  } else {
    for (const auto& x : split_items(s, ',')) {
      out.push_back(parse_size(x, "--bytes"));
      if (const std::string why = byte_bound_problem("--bytes", "size '" + x + "'", out.back()); !why.empty()) throw UsageError(why);
    }
  }
  if (out.empty()) throw UsageError("--bytes: no sizes given");
  return out;
}

// What would narrow an answer on more nodes than its machine measured when no machine lent it a scale-out step
// (model/scale_out.h): its interval is then that of an unknown network.
std::string across_nodes_note(const ModelSet& set, const PredictQuery& q) {
  std::string system = q.system;
  if (system.empty() && set.systems().size() == 1) system = set.systems().front();
  return "note: no machine (in the models file or --prior) lent " + (system.empty() ? std::string("the machine") : system) +
         " a scale-out step to " + std::to_string(q.nranks) + " GPUs on " + std::to_string(q.nnodes) +
         " nodes, so the interval is an unknown network's. It narrows with a count of the machine's own measured on more "
         "than one node, or another machine that measured its largest count on one node (or a two-node log of the same "
         "GPU, paired with a one-node log that did) and either that step or its own network within it (docs/fit.md, "
         "\"Across node boundaries\")\n";
}

// The machines an answer may rest on (the query's, and every --prior's) whose GPU only their label tells, often a
// file's name (model/sm_targets.h, machines_known_by_label_only): `how` and a note say so, a name not being a
// measurement.
std::map<std::string, LabelOnlyMachine> machines_by_label_only(const ModelSet& set, const std::string& system,
                                                               const std::vector<ModelSet>& lenders) {
  std::map<std::string, LabelOnlyMachine> out = machines_known_by_label_only(set.raw().value("groups", nlohmann::json::array()), system);
  for (const ModelSet& l : lenders) out.merge(machines_known_by_label_only(l.raw().value("groups", nlohmann::json::array())));
  return out;
}

// Whether `how` names the machine `label` as a word of its own (a lender list "a, b"), not inside a longer label.
bool how_names_machine(const std::string& how, const std::string& label) {
  auto label_char = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'; };
  for (std::size_t at = how.find(label); at != std::string::npos; at = how.find(label, at + 1)) {
    const std::size_t end = at + label.size();
    if ((at == 0 || !label_char(how[at - 1])) && (end == how.size() || !label_char(how[end]))) return true;
  }
  return false;
}

// `how` of an answer with each machine of `by_label` it names (or the query's own, `system`) marked as known by its
// label. Only an answer beyond the measurements (across nodes, --sm, a transfer) uses the SM; `marked` collects them.
std::string how_with_label_only_machines(const Prediction& p, const std::map<std::string, LabelOnlyMachine>& by_label,
                                         const std::string& system, std::map<std::string, LabelOnlyMachine>& marked) {
  std::string how = p.how;
  if (!p.extrapolated && !p.transferred) return how;
  for (const auto& [machine, known] : by_label)
    if (machine == system || how_names_machine(p.how, machine)) {
      how += label_only_machine_how(machine, known);
      marked.emplace(machine, known);
    }
  return how;
}

void run_predict(const PredictArgs& a) {
  const int modes = !a.bytes.empty() + (!a.tokens.empty() || !a.hidden.empty()) + !a.splits.empty();
  if (modes != 1) throw UsageError("give exactly one of --bytes, --tokens/--hidden, --splits");
  if (!a.tokens.empty() != !a.hidden.empty()) throw UsageError("--tokens and --hidden go together");
  PredictRequest request;
  request.models_name = a.models;
  request.collective = a.collective, request.strategy = a.strategy, request.system = a.system;
  request.fusion = a.fusion, request.dtype = a.dtype;
  request.nranks = a.nranks, request.nnodes = a.nnodes, request.sm = a.sm;
  request.first_split = a.splits.empty() ? std::string() : a.splits.front();
  request.shaped = !a.tokens.empty();
  nodes_option(a.nnodes, a.nranks, "--nranks");  // before the models file is read, as every option check
  const ModelSet set = ModelSet::load(a.models);
  // The system, strategy, dtype and GPU count the request means (model/predict_answer.h): what it names wrongly, or
  // leaves open where the file holds several, is the user's to correct (exit 2), not a query without an answer.
  ResolvedPredict resolved;
  try {
    resolved = resolve_predict_request(set, request);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const PredictQuery& base = resolved.base;
  // A prior is another machine: never the measurements this models file rests on (fit/prior_check.h).
  std::vector<ModelSet> lenders;
  if (!a.priors.empty())
    lenders = load_priors(read_prior_files(a.priors), "auto", 1, fit::own_measurements_of_models({a.models, input_fingerprint(a.models)}, set));
  const int answered_nranks = resolved.busbw_nranks;
  const std::string machine = !base.system.empty() || set.systems().size() != 1 ? base.system : set.systems().front();
  const std::map<std::string, LabelOnlyMachine> by_label = machines_by_label_only(set, machine, lenders);
  std::map<std::string, LabelOnlyMachine> marked;  // those of by_label an answer's `how` names
  std::vector<PredictQuery> qs;
  // Per query, the GPU count of its bus bandwidth: --nranks, else the file's one count, else a split's ranks. Without
  // it the column named busbw printed the algorithm bandwidth (51 GB/s for 89.6 with --nranks 8 on one 8-GPU model).
  std::vector<int> busbw_nranks;
  if (!a.bytes.empty()) {
    for (double b : parse_sizes(a.bytes)) {
      PredictQuery q = base;
      q.bytes = b;
      qs.push_back(q);
      busbw_nranks.push_back(answered_nranks);
    }
  } else if (!a.tokens.empty()) {
    const std::string& sized_as = resolved.sized_as;
    for (const auto& t : split_items(a.tokens, ','))
      for (const auto& h : split_items(a.hidden, ',')) {
        PredictQuery q = base;
        q.tokens = parse_count(t, "--tokens");
        q.hidden = parse_count(h, "--hidden");
        if (const std::string why = byte_bound_problem("--tokens x --hidden", t + " x " + h + " x " + sized_as,
                                                       message_bytes(static_cast<double>(q.tokens), static_cast<double>(q.hidden), sized_as));
            !why.empty())
          throw UsageError(why);
        qs.push_back(q);
        busbw_nranks.push_back(answered_nranks);
      }
  } else {
    for (const auto& sp : a.splits) {
      AllToAllvSplit split;
      try {
        split = parse_alltoallv_split(sp);
      } catch (const std::invalid_argument& e) {
        throw UsageError(std::string("--splits: ") + e.what());
      }
      if (a.nranks > 0 && split.nranks() != a.nranks)
        throw UsageError("--splits '" + sp + "' has " + std::to_string(split.nranks()) + " ranks, --nranks " + std::to_string(a.nranks));
      double sent = 0;
      for (int r = 0; r < split.nranks(); ++r) sent += split.sent(r);
      if (!(sent > 0)) throw UsageError("--splits '" + sp + "' sends nothing");
      if (const std::string why = byte_bound_problem("--splits", "what a rank of '" + sp + "' sends on average", sent / split.nranks());
          !why.empty())
        throw UsageError(why);
      PredictQuery q = base;
      q.splits = sp;
      qs.push_back(q);
      busbw_nranks.push_back(split.nranks());
    }
  }
  nlohmann::json out = nlohmann::json::array();
  if (!a.json)
    std::printf("%14s %8s %8s %12s %12s %12s %10s  %s\n", "bytes", "tokens", "hidden", "time_us", "lo90_us", "hi90_us",
                "busbw_GBps", "how");
  int missing = 0;
  std::string refused;  // why predict refuses the strategy across nodes (model/model_set.h), when it does
  bool unknown_network = false;
  for (std::size_t i = 0; i < qs.size(); ++i) {
    const PredictQuery& q = qs[i];
    const PredictAnswer answer = answer_predict_query(set, lenders, q, busbw_nranks[i]);
    unknown_network = unknown_network || answer.unknown_network;
    if (!answer.prediction) {
      ++missing;
      refused = answer.refused_across_nodes ? answer.error : std::string();
      // No model, so no dtype to size tokens × hidden or a split with: the query as given.
      if (!a.json)
        std::printf("%14.0f %8lld %8lld  %s%s%s\n", q.bytes, (long long)q.tokens, (long long)q.hidden, answer.error.c_str(),
                    q.splits.empty() ? "" : ": ", q.splits.c_str());
      nlohmann::json r = {{"error", answer.error}};
      if (q.bytes > 0) r["bytes"] = q.bytes;
      if (q.tokens) {
        r["tokens"] = q.tokens;
        r["hidden"] = q.hidden;
      }
      if (!q.splits.empty()) r["splits"] = q.splits;
      out.push_back(r);
      continue;
    }
    const Prediction& p = *answer.prediction;
    const double bytes = p.bytes;  // the size the models file answered for (its group's dtype when --dtype is omitted)
    const std::string how = how_with_label_only_machines(p, by_label, machine, marked);
    if (a.json) {
      nlohmann::json r = {{"bytes", bytes}, {"time_us", p.time_us}, {"lo_us", p.lo_us}, {"hi_us", p.hi_us},
                          {"busbw_gbps", answer.busbw_gbps}, {"extrapolated", p.extrapolated}, {"transferred", p.transferred},
                          {"how", how}};
      if (q.tokens) {
        r["tokens"] = q.tokens;
        r["hidden"] = q.hidden;
      }
      if (!q.splits.empty()) r["splits"] = q.splits;
      out.push_back(r);
    } else {
      std::printf("%14.0f %8lld %8lld %12.3f %12.3f %12.3f %10.2f  %s%s\n", bytes, (long long)q.tokens, (long long)q.hidden,
                  p.time_us, p.lo_us, p.hi_us, answer.busbw_gbps, how.c_str(), p.extrapolated ? " (extrapolated)" : "");
    }
  }
  if (a.json) std::cout << json_document_text(out);
  if (unknown_network) std::cerr << across_nodes_note(set, base);
  for (const auto& [name, known] : marked)
    std::cerr << "note: " << label_only_machine_note(name, known)
              << (known.file_name.empty() ? "" : " (the same bytes under another name answer otherwise)")
              << " (docs/fit.md, \"Machine identity\")\n";
  if (missing == static_cast<int>(qs.size()) && !refused.empty()) throw std::runtime_error(refused);
  if (missing == static_cast<int>(qs.size()))
    throw std::runtime_error("no model in " + a.models +
                             " answers the query (check --system, --collective, --strategy, --fusion, --dtype, --nnodes)");
}

void add_predict(CLI::App& app) {
  auto a = std::make_shared<PredictArgs>();
  auto* cmd = app.add_subcommand("predict", "Predict latency with a 90 % interval from a models file");
  cmd->add_option("models", a->models, "models.json written by `arfit fit`")->required()->check(input_file_validator());
  cmd->add_option("--collective", a->collective, "allreduce, allgather, reducescatter, alltoall, alltoallv, ...")->required();
  cmd->add_option("--strategy", a->strategy, "Strategy name as in the samples, one the models file has for the collective (default NCCL)");
  cmd->add_option("--system", a->system, "System label (default: the only one in the file; required when it holds several)");
  cmd->add_option("--fusion", a->fusion, "Fusion op (default NONE)");
  cmd->add_option("--dtype", a->dtype, "dtype (default: the group's, when there is only one; with several, a usage error listing them); without a model of it, a type of the same element size answers, as in codegen, and `how` says which");
  cmd->add_option("--nranks", a->nranks, "GPU count (required when the file has several for the query; with --splits, the split's own count by default); an unmeasured count uses the joint fit across counts")
      ->check(CLI::Range(1, kMaxModelRanks));
  cmd->add_option("--nnodes", a->nnodes, "Node count (default 1); more than measured: within the machine's measured network, else other machines' scale-out step (measured, or bridged through their own network; a two-node log paired with a one-node log of its GPU; from this file or --prior), else the machine's own answer widened by an unknown network (with a note). Only NCCL's own (NCCL, NCCL_SYMMETRIC, forced ring/tree/PAT/CollNet/NVLS-tree variants) run across nodes by construction; any other strategy (custom all-reduce: peer GPU memory within a node) is answered there only where this file or --prior measured it on more than one node, else not, saying why")->check(CLI::Range(1, kMaxModelRanks));
  cmd->add_option("--prior", a->priors,
                  "Other machines (models files from `arfit fit`, or samples in any format, fitted here) whose "
                  "scale-out steps a query on more nodes than its machine measured may borrow, as if they were in the "
                  "models file; they answer nothing else (docs/fit.md, \"Across node boundaries\"). A prior holding the models "
                  "file's own measurements (the file or an input it records, by any name, a models file fitted from one, or "
                  "a group under its label holding one of its points) is refused (docs/fit.md, \"Priors are other machines\")")
      ->check(input_file_validator());
  cmd->add_option("--sm", a->sm, "Target SM version (80, 89, 90, 100, 103, 120): transfers the model, flagged extrapolated")
      ->check(known_sm_validator());
  cmd->add_option("--bytes", a->bytes, "Sizes: LIST (4096,64K,1M; K M G T or KiB..TiB, powers of 1024) or RANGE A:B[:FACTOR] (powers of FACTOR, default 2), from 1 to 1e18 bytes");
  cmd->add_option("--tokens", a->tokens, "Token counts (LIST of whole numbers, at least 1), with --hidden: bytes = tokens x hidden x dtype size (at most 1e18)");
  cmd->add_option("--hidden", a->hidden, "Hidden sizes (LIST of whole numbers, at least 1)");
  cmd->add_option("--splits", a->splits,
                  "all-to-allv split (with --collective alltoallv; one entry per rank) \"B,T0-T1-...,D\" (batch, tables per rank, dim; fp32) or \"S0-S1-...\" (bytes sent "
                  "per rank); predicted through the all-to-all model at the effective size (models file's alltoallv_mode)");
  cmd->add_flag("--json", a->json, "Print JSON instead of a table");
  cmd->callback([a] { run_predict(*a); });
}

}  // namespace
}  // namespace arfit::cli

ARFIT_REGISTER_COMMAND(predict, 21, arfit::cli::add_predict);
