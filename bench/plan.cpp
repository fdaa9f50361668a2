#include "bench/plan.h"

#include "bench/alltoallv_splits.h"
#include "model/text.h"

#include <algorithm>
#include <map>
#include <set>


namespace arfit::bench {

int rotation_buffers(std::int64_t bytes, int requested) {
  if (requested > 0) return requested;
  constexpr std::int64_t kSpan = std::int64_t{64} << 20;
  if (bytes >= kSpan) return 1;
  const std::int64_t stride = (std::max<std::int64_t>(bytes, 1) + 4095) / 4096 * 4096;
  return static_cast<int>(std::clamp<std::int64_t>(kSpan / stride, 2, 16));
}

std::vector<int> default_tp(int world) {
  if (world <= 1) return {1};
  std::vector<int> v;
  for (int t = 2; t <= world; t *= 2) v.push_back(t);
  if (v.back() != world) v.push_back(world);
  return v;
}

namespace {

// The axes left empty take their defaults; every dtype is known.
void apply_defaults(GridSpec& spec, const Limits& lim) {
  if (spec.collectives.empty()) spec.collectives = {Collective::AllReduce};
  if (spec.fusions.empty()) spec.fusions = {FusionOp::None};
  if (spec.dtypes.empty()) spec.dtypes = {"bf16"};
  if (spec.tp.empty()) spec.tp = lim.virtual_ranks ? std::vector<int>{2, 4, 8} : default_tp(lim.world);
  for (auto& d : spec.dtypes) {
    d = canonical_dtype(d);
    if (dtype_size(d) == 0) throw GridError(spec.option_for("dtypes"), "unknown dtype '" + d + "'");
  }
}

// All-to-allv splits: cyclic unless given; only all-to-allv has them. Returns whether the grid needs no size axis
// (all-to-allv alone, with only dlrm splits: the tables set the sizes).
bool settle_splits(GridSpec& spec) {
  const bool has_a2av =
      std::find(spec.collectives.begin(), spec.collectives.end(), Collective::AllToAllV) != spec.collectives.end();
  if (!spec.splits.empty() && !has_a2av) {
    // A preset's splits go quietly with its all-to-allv; splits asked for explicitly must have one.
    if (spec.option_for("splits").rfind("--preset", 0) != 0)
      throw GridError(spec.option_for("splits"), "split patterns apply to all-to-allv only; add --collective alltoallv");
    spec.splits.clear();
  }
  if (has_a2av && spec.splits.empty()) spec.splits = {"cyclic"};
  bool sized_by_tables_only = has_a2av && spec.collectives.size() == 1;
  for (const auto& s : spec.splits)
    sized_by_tables_only = sized_by_tables_only && parse_split_patterns(s, spec.option_for("splits")).front().sized_by_tables();
  return sized_by_tables_only;
}

// Sizes: --tokens with --hidden, or byte sizes, one of the two unless the splits' tables size every case.
void check_size_axes(const GridSpec& spec, bool sized_by_tables_only) {
  const bool has_tok = !spec.tokens.empty(), has_hid = !spec.hidden.empty(), has_bytes = !spec.bytes.empty();
  if (has_tok != has_hid)
    throw GridError(has_tok ? spec.option_for("hidden") : spec.option_for("tokens"),
                    "--tokens and --hidden go together (the message is a [tokens, hidden] activation)");
  if (has_tok && has_bytes)
    throw GridError(spec.option_for("bytes"), "give either byte sizes (--bytes, -b/-e/-f) or --tokens/--hidden, not both");
  if (!has_tok && !has_bytes && !sized_by_tables_only)
    throw GridError("--bytes", "no message sizes: give --tokens and --hidden, --bytes, -b/-e/-f, or a --preset");
}

// TP sizes: at least 1, within the world unless the ranks are virtual; sorted, each once.
void settle_tp(GridSpec& spec, const Limits& lim) {
  for (int t : spec.tp) {
    if (t < 1) throw GridError(spec.option_for("tp"), "TP size " + std::to_string(t) + " must be at least 1");
    if (!lim.virtual_ranks && t > lim.world)
      throw GridError(spec.option_for("tp"), "TP " + std::to_string(t) + " is larger than the world size " +
                                                 std::to_string(lim.world) + " (launch with mpirun -np " +
                                                 std::to_string(t) + " or more)");
  }
  std::sort(spec.tp.begin(), spec.tp.end());
  spec.tp.erase(std::unique(spec.tp.begin(), spec.tp.end()), spec.tp.end());
}

// Every collective has an implementation in the backend, and every named strategy has each collective (unless
// unsupported combinations are to be skipped).
void check_strategies(const GridSpec& spec) {
  for (Collective c : spec.collectives) {
    auto have = strategies_of(spec.backend, c);
    if (have.empty())
      throw GridError(spec.option_for("collectives"),
                      "the " + spec.backend + " backend has no " + to_string(c) + " implementation");
    for (const auto& s : spec.strategies)
      if (std::find(have.begin(), have.end(), s) == have.end() && !spec.skip_unsupported)
        throw GridError(spec.option_for("strategies"), "strategy '" + s + "' has no " + to_string(c) + " in the " +
                                                           spec.backend + " backend (available: " + join(have, ", ") + ")");
  }
}

// Why a case of the full grid is left out (its strategy lacks the collective, fusion or dtype, or a fusion has no
// rows), where the grid allows leaving it out; empty to keep it. Where the grid does not, a GridError naming the option.
std::string reason_to_drop(const Case& c, const Descriptor* d, const GridSpec& spec) {
  if (!d) return c.strategy + " has no " + to_string(c.collective);  // only reachable with skip_unsupported
  if (!d->supports(c.fusion)) {
    // No --strategy: "all of the backend" means the ones that have the fusion (the multimem kernels are NONE only);
    // --fusion all: every fusion each strategy has.
    if (spec.skip_unsupported || spec.every_fusion || spec.strategies.empty())
      return c.strategy + " " + to_string(c.collective) + " lacks fusion " + to_string(c.fusion);
    std::vector<std::string> f;
    for (auto x : d->fusions) f.push_back(to_string(x));
    throw GridError(spec.option_for("fusions"), spec.backend + " " + to_string(c.collective) + " " + c.strategy +
                                                    " does not support fusion " + to_string(c.fusion) +
                                                    " (supported: " + join(f, ", ") + ")");
  }
  if (!d->supports(c.dtype)) {
    if (spec.skip_unsupported) return c.strategy + " " + to_string(c.collective) + " lacks dtype " + c.dtype;
    throw GridError(spec.option_for("dtypes"), spec.backend + " " + to_string(c.collective) + " " + c.strategy +
                                                   " does not support dtype " + c.dtype + " (supported: " +
                                                   join(d->dtypes, ", ") + ")");
  }
  if (c.fusion != FusionOp::None && c.tokens == 0 && spec.every_fusion)
    return "fusion " + to_string(c.fusion) + " without --tokens/--hidden";
  if (c.fusion != FusionOp::None && c.tokens == 0)
    throw GridError(spec.option_for("fusions"), "fusion " + to_string(c.fusion) +
                                                    " needs --tokens and --hidden (a byte size has no rows to normalise)");
  return "";
}

// A case's buffers must fit in 80 % of this node's memory per rank and of the address space a rank may still map.
void check_case_memory(const Case& c, const Descriptor& d, const GridSpec& spec, const PlanOptions& options) {
  if (options.memory_bytes <= 0 && options.address_space_bytes <= 0) return;
  const ByteCounts bc = d.byte_counts(c.count, c.elem_size(), c.tp);
  const std::int64_t ws = d.uses_workspace && d.workspace_bytes ? d.workspace_bytes(c) : 0;
  const std::int64_t per_rank = bc.send_bytes * rotation_buffers(bc.send_bytes, options.buffers) + 3 * bc.recv_bytes + ws;
  const std::string size_option = c.tokens ? spec.option_for("tokens") + "/" + spec.option_for("hidden") : spec.option_for("bytes");
  const auto mib = [](std::int64_t bytes) { return format_bytes(bytes / 1048576 * 1048576); };
  const std::int64_t budget = options.memory_bytes / std::max(1, options.ranks_per_node) * 8 / 10;
  if (options.memory_bytes > 0 && per_rank > budget)
    throw GridError(size_option, c.describe() + " needs about " + mib(per_rank) +
                                     " per rank, more than 80% of this node's memory per rank (" + mib(budget) + ")");
  // Every rank of a shared-memory group maps the whole window: its peers' segments count in its address space.
  const std::int64_t mapped = per_rank + ws * (std::max(1, c.tp) - 1);
  const std::int64_t mappable = options.address_space_bytes / 10 * 8;
  if (options.address_space_bytes > 0 && mapped > mappable)
    throw GridError(size_option, c.describe() + " needs about " + mib(mapped) +
                                     " of address space per rank, more than 80% of what this rank may still map "
                                     "under its limit (ulimit -v: " + mib(options.address_space_bytes) + " left)");
}

// What was left out of the full grid: strategies' gaps, and cases below one element per rank (the part of those a dlrm
// split's own size caused: batch / ranks rows).
struct LeftOut {
  std::set<std::string> dropped;
  std::size_t too_small = 0, too_small_by_split = 0;
};

void add_notices(const LeftOut& left, std::size_t repeated_cases, std::vector<std::string>& notices) {
  for (const auto& d : left.dropped) notices.push_back("skipped (unsupported): " + d);
  if (left.too_small)
    notices.push_back("skipped " + std::to_string(left.too_small) + " cases whose size is below one element per rank");
  if (repeated_cases)
    notices.push_back("measured once: " + std::to_string(repeated_cases) +
                      " cases repeat an earlier case's measurement (the same all-to-allv split at the same "
                      "size, e.g. dlrm seeds that draw the same tables per rank)");
}

// Say why every case went: the notices are printed only for a run that goes on. A dlrm split sets its own size: where
// it made every case empty, its batch is below the rank count, not a size option's fault (none need have been given).
[[noreturn]] void refuse_empty_grid(const LeftOut& left, const GridSpec& spec) {
  if (left.too_small && left.dropped.empty() && left.too_small_by_split == left.too_small)
    throw GridError(spec.option_for("splits"), "the grid has no runnable case: in all " + std::to_string(left.too_small) +
                                                   " the dlrm split's batch B is below the rank count (floor(B/TP) "
                                                   "rows per rank would be none: a larger B or a smaller TP)");
  if (left.too_small && left.dropped.empty())
    throw GridError(spec.token_mode() ? spec.option_for("tokens") + "/" + spec.option_for("hidden") : spec.option_for("bytes"),
                    "the grid has no runnable case: all " + std::to_string(left.too_small) +
                        " are below one element per rank (a larger size, a fatter split or a smaller TP)");
  std::string why;
  for (const auto& d : left.dropped) why += (why.empty() ? "" : "; ") + d;
  if (left.too_small) why += (why.empty() ? "" : "; ") + std::to_string(left.too_small) + " below one element per rank";
  throw GridError(spec.option_for("strategies"), "the grid has no runnable case" + (why.empty() ? std::string() : " (" + why + ")"));
}

}  // namespace

PlannedGrid plan_cases(GridSpec& spec, const PlanOptions& options, std::vector<std::string>* notices) {
  const Limits& lim = options.limits;
  if (std::string why = backend_unavailable_reason(spec.backend); !why.empty()) throw GridError("--backend", why);
  apply_defaults(spec, lim);
  check_size_axes(spec, settle_splits(spec));
  settle_tp(spec, lim);
  check_strategies(spec);

  // Without --strategy: every exact strategy of the backend (an inexact one such as LOWPRECISION only when named).
  PlannedGrid full = expand_grid(spec, [&](Collective c) { return default_strategies_of(spec.backend, c); });
  PlannedGrid out;
  out.full_points = full.full_points;
  out.planned_points = full.planned_points;
  out.full_cases = full.full_cases;
  out.repeated_cases = full.repeated_cases;
  LeftOut left;
  for (Case& c : full.cases) {
    const Descriptor* d = find_descriptor(spec.backend, c.collective, c.strategy);
    if (std::string why = reason_to_drop(c, d, spec); !why.empty()) {
      left.dropped.insert(why);
      continue;
    }
    if (c.count == 0) {
      ++left.too_small;
      left.too_small_by_split += c.split.rfind("dlrm:", 0) == 0;
      continue;
    }
    if (d->validate)
      if (auto issue = d->validate(c, lim)) throw GridError(issue->option, issue->what);
    check_case_memory(c, *d, spec, options);
    c.index = static_cast<int>(out.cases.size());
    out.cases.push_back(c);
  }
  if (notices) add_notices(left, full.repeated_cases, *notices);
  if (out.cases.empty()) refuse_empty_grid(left, spec);
  return out;
}

}  // namespace arfit::bench
