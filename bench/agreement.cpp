#include "bench/agreement.h"

#include <algorithm>
#include <cstring>
#include <sstream>
#include <type_traits>
#include <vector>

#include "model/text.h"

namespace arfit::bench {
namespace {

std::uint64_t fingerprint(const std::string& text) { return std::stoull(fnv1a64_hex(text), nullptr, 16); }

// One value as plan text: enums (Collective, FusionOp) by their names (arfit::to_string), everything else streamed
// with 17 significant digits.
template <typename T>
void append_text(std::ostringstream& s, const T& value) {
  if constexpr (std::is_enum_v<T>) {
    s << arfit::to_string(value);
  } else {
    s << value;
  }
}

template <typename T>
std::string text_of(const T& value) {
  std::ostringstream s;
  s.precision(17);
  append_text(s, value);
  return s.str();
}

template <typename T>
std::string text_of(const std::vector<T>& values) {
  std::ostringstream s;
  s.precision(17);
  for (const T& v : values) {
    append_text(s, v);
    s << ',';
  }
  return s.str();
}

// "rank 1", "ranks 1, 3", "ranks 2-5, 7": runs of consecutive ranks as ranges.
std::string format_ranks(const std::vector<int>& ranks) {
  std::string s = ranks.size() == 1 ? "rank " : "ranks ";
  for (std::size_t i = 0; i < ranks.size();) {
    std::size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    s += (i ? ", " : "") + std::to_string(ranks[i]) + (j > i ? "-" + std::to_string(ranks[j]) : "");
    i = j + 1;
  }
  return s;
}

bool is_error(const RankPlan& p) { return p.kind == RankPlan::kUsageError || p.kind == RankPlan::kFailed; }

bool same_plan(const RankPlan& a, const RankPlan& b) {
  if (a.kind != b.kind) return false;
  if (is_error(a)) return a.error_hash == b.error_hash;
  return a.kind != RankPlan::kRun || a.part == b.part;
}

// Why the ranks disagree, clause by clause: which ranks asked for --help or --version, which had a usage error
// (and on which option), which planned differently from the first rank that planned a run, and in which parts.
std::string describe_disagreement(const std::vector<RankPlan>& all) {
  std::vector<std::string> clauses;
  auto ranks_where = [&](auto&& pred) {
    std::vector<int> r;
    for (std::size_t i = 0; i < all.size(); ++i)
      if (pred(all[i])) r.push_back(static_cast<int>(i));
    return r;
  };
  for (auto [kind, flag] : {std::pair{RankPlan::kHelp, "--help"}, std::pair{RankPlan::kVersion, "--version"}}) {
    const auto r = ranks_where([kind = kind](const RankPlan& p) { return p.kind == kind; });
    if (!r.empty()) clauses.push_back(format_ranks(r) + (r.size() == 1 ? " was" : " were") + " given " + flag);
  }
  std::vector<std::string> options;  // the usage errors' options, in rank order, each once
  for (const RankPlan& p : all)
    if (p.kind == RankPlan::kUsageError) {
      const std::string o(p.error_option, strnlen(p.error_option, sizeof p.error_option));
      if (std::find(options.begin(), options.end(), o) == options.end()) options.push_back(o);
    }
  for (const std::string& o : options) {
    const auto r = ranks_where([&](const RankPlan& p) {
      return p.kind == RankPlan::kUsageError && o == std::string(p.error_option, strnlen(p.error_option, sizeof p.error_option));
    });
    clauses.push_back(format_ranks(r) + (r.size() == 1 ? " has" : " have") + " a usage error in option " + o);
  }
  const auto failed = ranks_where([](const RankPlan& p) { return p.kind == RankPlan::kFailed; });
  if (!failed.empty()) clauses.push_back(format_ranks(failed) + " failed while planning the run");
  const auto runs = ranks_where([](const RankPlan& p) { return p.kind == RankPlan::kRun; });
  if (!runs.empty()) {
    const RankPlan& first = all[static_cast<std::size_t>(runs.front())];
    bool named = false;  // an option explains the difference; the last part (the cases) then says nothing more
    for (std::size_t k = 0; k < kPlanParts && !(named && k + 1 == kPlanParts); ++k) {
      const auto r = ranks_where([&](const RankPlan& p) { return p.kind == RankPlan::kRun && p.part[k] != first.part[k]; });
      if (r.empty()) continue;
      clauses.push_back(format_ranks(r) + (r.size() == 1 ? " differs" : " differ") + " from rank " + std::to_string(runs.front()) +
                        " in " + plan_part_names()[k]);
      named = true;
    }
  }
  std::string s = "the ranks were started with different options: ";
  for (std::size_t i = 0; i < clauses.size(); ++i) s += (i ? "; " : "") + clauses[i];
  return s + ". Give every rank the same command line";
}

}  // namespace

const std::array<const char*, kPlanParts>& plan_part_names() {
  static const std::array<const char*, kPlanParts> names = {
      "--backend", "--dry-run", "--workspace", "-w/--warmup", "-n/--iters", "--buffers", "-G/--cuda-graph",
      "--timeout", "--on-timeout", "--virtual-ranks", "--collective", "--strategy", "--fusion", "--dtype", "--tp",
      "the sizes (--bytes, -b/-e/-f, --tokens/--hidden)", "--splits", "--plan",
      "the planned cases (same options, but the nodes' memory or rank count planned others)"};
  return names;
}

RankPlan plan_of_rank(const Options& opt, const PlannedGrid& grid) {
  RankPlan p;
  p.kind = opt.help ? RankPlan::kHelp : opt.version ? RankPlan::kVersion : RankPlan::kRun;
  if (p.kind != RankPlan::kRun) return p;
  const GridSpec& g = opt.spec;
  const RunnerOptions& r = opt.runner;
  std::string cases;
  for (const Case& c : grid.cases) cases += std::to_string(c.index) + ' ' + c.key() + '|';
  const std::array<std::string, kPlanParts> texts = {
      g.backend, text_of(opt.dry_run), text_of(opt.workspace), text_of(r.warmup), text_of(r.iters), text_of(r.buffers),
      text_of(r.cuda_graph), text_of(r.timeout_s), text_of(r.stop_on_timeout), text_of(r.virtual_ranks),
      text_of(g.collectives), text_of(g.strategies), text_of(g.fusions), text_of(g.dtypes), text_of(g.tp),
      text_of(g.bytes) + '|' + text_of(g.tokens) + '|' + text_of(g.hidden), text_of(g.splits), g.plan.to_string(), cases};
  for (std::size_t k = 0; k < kPlanParts; ++k) p.part[k] = fingerprint(texts[k]);
  return p;
}

RankPlan usage_error_of_rank(const std::string& option, const std::string& message) {
  RankPlan p;
  p.kind = RankPlan::kUsageError;
  p.error_hash = fingerprint(message);
  std::strncpy(p.error_option, option.c_str(), sizeof p.error_option - 1);
  return p;
}

RankPlan failure_of_rank(const std::string& message) {
  RankPlan p;
  p.kind = RankPlan::kFailed;
  p.error_hash = fingerprint(message);
  return p;
}

Verdict judge_agreement(const std::vector<RankPlan>& all, int rank) {
  Verdict v;
  const RankPlan& root = all.front();
  const RankPlan& mine = all[static_cast<std::size_t>(rank)];
  const bool alike = std::all_of(all.begin(), all.end(), [&](const RankPlan& p) { return same_plan(p, root); });
  if (alike) {
    // One command line on every rank: rank 0 answers for all (its usage error, its help, its run).
    v.kind = static_cast<RankPlan::Kind>(root.kind);
    v.status = root.kind == RankPlan::kUsageError ? 2 : root.kind == RankPlan::kFailed ? 1 : 0;
    v.print_own_error = is_error(root) && rank == 0;
    return v;
  }
  // A rank that failed makes it a failed run (1); otherwise the command lines differ (2).
  const bool any_failed = std::any_of(all.begin(), all.end(), [](const RankPlan& p) { return p.kind == RankPlan::kFailed; });
  v.status = any_failed ? 1 : 2;
  // Each distinct error is said once, by the lowest rank that has it.
  v.print_own_error = is_error(mine) && std::none_of(all.begin(), all.begin() + rank, [&](const RankPlan& p) { return same_plan(p, mine); });
  v.message = describe_disagreement(all);
  return v;
}

Verdict agree_on_the_run(MPI_Comm world, const RankPlan& mine) {
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  std::vector<RankPlan> all(static_cast<std::size_t>(size));
  MPI_Allgather(&mine, sizeof(RankPlan), MPI_BYTE, all.data(), sizeof(RankPlan), MPI_BYTE, world);
  return judge_agreement(all, rank);
}

StepOutcome agree_on_step(MPI_Comm world, int status, const std::string& error) {
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  const std::uint64_t mine[2] = {static_cast<std::uint64_t>(status), status != 0 ? fingerprint(error) : 0};
  std::vector<std::uint64_t> all(2 * static_cast<std::size_t>(size));
  MPI_Allgather(mine, 2, MPI_UINT64_T, all.data(), 2, MPI_UINT64_T, world);
  StepOutcome out;
  bool said_below = false;
  for (int r = 0; r < size; ++r) {
    const std::uint64_t* theirs = &all[2 * static_cast<std::size_t>(r)];
    out.status = std::max(out.status, static_cast<int>(theirs[0]));
    if (r < rank && theirs[0] == mine[0] && theirs[1] == mine[1]) said_below = true;
  }
  out.say_own_error = status != 0 && !said_below;
  return out;
}

}  // namespace arfit::bench
