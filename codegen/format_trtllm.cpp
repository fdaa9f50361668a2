// --format trtllm: TensorRT-LLM's AllReduceBestStrategyTableSM<90|100> (cpp/tensorrt_llm/common/
// customAllReduceUtils.h). Its lookup, selectStrategyLookUpTable, indexes purely by position -- TP by
// log2(tp) - 1, fusion by its own order, hidden by log2(hidden) - 7, tokens by log2(tokens) -- and reads only the
// SM90 and SM100 tables, so the table always has its full axes and strategies it can number.
#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "codegen/formats.h"
#include "codegen/rules_trtllm.h"
#include "codegen/safe_text.h"
#include "codegen/trtllm_base.h"
#include "codegen/writers.h"
#include "model/text.h"

namespace arfit::codegen {

int trtllm_fusion_op(FusionOp fusion) {
  switch (fusion) {
    case FusionOp::None: return 0;
    case FusionOp::ResidualRmsNorm: return 1;
    case FusionOp::ResidualRmsNormQuantFp8: return 4;
    case FusionOp::ResidualRmsNormQuantNvfp4: return 5;
    case FusionOp::ResidualRmsNormOutQuantFp8: return 6;
    case FusionOp::ResidualRmsNormOutQuantNvfp4: return 7;
  }
  return -1;
}

int trtllm_table_sm(int sm) { return sm < 100 ? 90 : 100; }

const std::vector<std::string>& trtllm_map_targets() {
  static const std::vector<std::string> targets{"NCCL", "ONESHOT", "TWOSHOT", "NCCL_SYMMETRIC", "ignore"};
  return targets;
}

bool is_trtllm_grid(const Grid& g) {
  const Grid trtllm;  // Grid's defaults are TensorRT-LLM's axes
  return g.tps == trtllm.tps && g.fusions == trtllm.fusions && g.hiddens == trtllm.hiddens && g.tokens == trtllm.tokens;
}

const std::vector<std::string>& trtllm_rule_names() {
  static const std::vector<std::string> names{"engine-size-gate", "nvfp4-below-sm100", "model", "base", "base-would-throw", "fallback"};
  return names;
}

int TrtllmTable::count(const std::string& rule) const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(), [&](const TrtllmCell& c) { return c.rule == rule; }));
}

int TrtllmTable::gated(GateCover cover) const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(), [&](const TrtllmCell& c) { return c.gate == cover; }));
}

int TrtllmTable::excluded_choices() const {
  int n = 0;
  for (std::size_t i = 0; i < cells.size(); ++i) {
    const Cell& c = table.cells[i];
    if (cells[i].rule != "model") continue;
    for (const auto& e : c.excluded)
      if (c.candidates.empty() || e.prediction.time_us < c.candidates[fastest_two(c.candidates).first].prediction.time_us) {
        ++n;
        break;
      }
  }
  return n;
}

int TrtllmTable::transferred() const {
  int n = 0;
  for (std::size_t i = 0; i < cells.size(); ++i) n += cells[i].rule == "model" && table.cells[i].transferred;
  return n;
}

namespace {

int code_of(const std::string& name) {
  const auto n = trtllm_strategy_number(name);
  if (!n)
    throw std::invalid_argument("strategy '" + name +
                                "' has no TensorRT-LLM number (NCCL=0, ONESHOT=4, TWOSHOT=5, NCCL_SYMMETRIC=8)");
  return *n;
}

// The request's grid must be TensorRT-LLM's, axis by axis, or its lookup would misread the table.
void require_trtllm_axes(const Request& r, const std::string& why) {
  const Grid g = request_grid(r), t;
  auto refuse = [&](const std::string& option, const std::string& axis) {
    throw std::invalid_argument(option + ": " + why + " (" + axis + "): its lookup indexes the table by position, so "
                                "other values would be misread; use --format header or json (without --base) for another grid");
  };
  if (g.tps != t.tps) refuse("--tp", "TP 2,4,8");
  if (g.fusions != t.fusions) refuse("--fusion", "all four fusion ops in TensorRT-LLM's order");
  if (g.hiddens != t.hiddens) refuse("--hidden", "hidden 128:8192");
  if (g.tokens != t.tokens) refuse("--tokens", "tokens 1:16384");
}

// The same table with TensorRT-LLM's preconditions applied at `sm` (a table built without them is chosen
// again; one built with them is unchanged).
StrategyTable runnable_on(const StrategyTable& table, int sm) {
  StrategyTable in = table;
  in.options.precondition = table_precondition(sm);
  StrategySources identity;
  for (const auto& s : table.strategies) identity[s] = {s};
  return remap_table(in, identity, table.options.fallback);
}

std::string off_table_name(int code) { return trtllm_strategy_name(code); }

bool same_rules(const TrtllmVersion& a, const TrtllmVersion& b) {
  return a.workspace_tp2_bytes == b.workspace_tp2_bytes && a.workspace_bytes == b.workspace_bytes &&
         a.off_table_code == b.off_table_code;
}

std::string rules_text(const TrtllmVersion& v) {
  return "workspace gate " + format_number(v.workspace_tp2_bytes, "%.0f") + " bytes at TP 2, " +
         format_number(v.workspace_bytes, "%.0f") + " above; off the table " + off_table_name(v.off_table_code);
}

}  // namespace

namespace {

// The rules to follow: those the --base file states (its getMaxRequiredWorkspaceSize and off-table return),
// else --consumer-version's, else the newest read. A --consumer-version that contradicts the file is refused.
std::pair<TrtllmVersion, std::string> resolve_trtllm_version(const Request& r, const std::optional<TrtllmBase>& base) {
  const TrtllmVersion named = trtllm_version(r.consumer_version);
  const std::string named_source = r.consumer_version.empty() ? "the newest version read" : "--consumer-version";
  if (!base || !base->workspace_bytes || !base->workspace_tp2_bytes || !base->off_table_code) return {named, named_source};
  TrtllmVersion stated{"", "", *base->workspace_tp2_bytes, *base->workspace_bytes, *base->off_table_code};
  stated.note = rules_text(stated);
  if (!r.consumer_version.empty() && !same_rules(stated, named))
    throw std::invalid_argument("--consumer-version " + r.consumer_version + ": the --base file " + base->path +
                                " states " + stated.note + ", not TensorRT-LLM " + named.commit + "'s (" + named.note +
                                "); leave --consumer-version out to follow the file");
  stated.commit = "the rules stated in " + base->path;
  for (const auto& v : trtllm_versions())
    if (same_rules(v, stated)) {
      stated = v;
      stated.commit = v.commit + ", as " + base->path + " states them";
      break;
    }
  return {stated, base->path};
}

}  // namespace

TrtllmTable trtllm_codes(const StrategyTable& table, int sm, const TrtllmVersion& version, const std::optional<TrtllmBase>& base) {
  TrtllmTable t;
  t.table = runnable_on(table, sm);
  t.table_sm = trtllm_table_sm(sm);
  t.version = version;
  t.base = base;
  if (base && base->cells.size() != t.table.cells.size())
    throw std::invalid_argument("--base: the file's table has " + std::to_string(base->cells.size()) + " cells, the grid " +
                                std::to_string(t.table.cells.size()));
  const int esize = std::max(1, dtype_size(table.options.dtype));
  t.cells.reserve(t.table.cells.size());
  for (std::size_t i = 0; i < t.table.cells.size(); ++i) {
    const Cell& c = t.table.cells[i];
    TrtllmCell tc;
    tc.gate = trtllm_size_gate(version, c.tp, c.tokens, c.hidden, esize);
    const int base_value = base ? base->cells[i].value : 0;
    if (tc.gate == GateCover::All) {
      // TensorRT-LLM runs NCCL before reading this cell: arfit claims nothing here.
      tc.code = base ? base_value : 0;
      tc.rule = "engine-size-gate";
    } else if (t.table_sm == 90 && c.fusion == FusionOp::ResidualRmsNormQuantNvfp4) {
      // TensorRT-LLM's own SM90 table holds NCCL in every NVFP4 cell (its fused NVFP4 kernels need SM100).
      tc.code = base && (base_value == 0 || base_value == 8) ? base_value : 0;
      tc.rule = "nvfp4-below-sm100";
    } else if (!c.fallback && (!base || c.candidates.size() >= 2)) {
      tc.code = code_of(upper(c.choice));
      tc.rule = "model";
    } else if (base) {
      const bool runs = trtllm_table_value_runs(base_value) &&
                        trtllm_precondition(sm, c.tp, c.tokens, c.hidden, trtllm_strategy_name(base_value)).empty();
      tc.code = runs ? base_value : 0;
      tc.rule = runs ? "base" : "base-would-throw";
    } else {
      tc.code = code_of(upper(c.choice));
      tc.rule = "fallback";
    }
    tc.strategy = trtllm_strategy_name(tc.code);
    t.cells.push_back(tc);
  }
  return t;
}

TrtllmTable build_trtllm_table(const ModelSet& models, const Request& r, const StrategyTable* all_strategies) {
  if (!trtllm_strategy_number(r.fallback))
    throw std::invalid_argument("--fallback: '" + r.fallback + "' has no TensorRT-LLM number (NCCL, ONESHOT, TWOSHOT, NCCL_SYMMETRIC)");
  std::optional<TrtllmBase> base;
  if (!r.base_path.empty()) {
    require_trtllm_axes(r, "a --base file holds TensorRT-LLM's table, with TensorRT-LLM's axes");
    base = read_trtllm_base(r.base_text, r.base_path, trtllm_table_sm(r.sm));
  }
  const auto [version, source] = resolve_trtllm_version(r, base);
  const std::string system = resolve_system(models, r.system);
  const auto strategies = system_strategies(models, system);
  const auto explicit_map = parse_map_options(r.map, strategies, trtllm_map_targets());
  StrategySources sources;
  std::vector<std::string> unmapped, not_from_table;
  for (const auto& s : strategies) {
    const auto it = explicit_map.find(s);
    const auto number = trtllm_strategy_number(s);
    if (it != explicit_map.end()) {
      // A lossy transport's curve standing for an exact strategy would put its speed on results it never computes.
      if (number && !trtllm_table_value_runs(*number) && it->second != "ignore")
        throw std::invalid_argument("--map: " + s + " (TensorRT-LLM " + trtllm_strategy_name(*number) +
                                    ") cannot stand for " + it->second + ": TensorRT-LLM never runs it from the table and "
                                    "its results are not exact (--map " + s + "=ignore, or leave it out)");
      if (it->second != "ignore") sources[it->second].push_back(s);
    } else if (number && !trtllm_table_value_runs(*number)) {
      not_from_table.push_back(s);
    } else if (number) {
      sources[upper(s)].push_back(s);
    } else {
      unmapped.push_back(s);
    }
  }
  // The table of every strategy, with the candidates renamed: the same predictions as the json format's cells.
  StrategyTable all;
  if (!all_strategies) {
    all = build_request_table(models, r);
    all_strategies = &all;
  }
  TrtllmTable t = trtllm_codes(remap_table(*all_strategies, sources, upper(r.fallback)), r.sm, version, base);
  t.version_source = source;
  t.sources = std::move(sources);
  t.unmapped = std::move(unmapped);
  t.not_from_table = std::move(not_from_table);
  return t;
}

namespace {

std::string table_name(const TrtllmTable& t) { return "AllReduceBestStrategyTableSM" + std::to_string(t.table_sm); }

// "Cells: ..." -- how many cells each rule wrote, the ones the engine decides itself, and the uncertain ones.
std::string cells_line(const TrtllmTable& tt) {
  const StrategyTable& t = tt.table;
  std::ostringstream s;
  s << "Cells: " << t.cells.size() << "; arfit's choice: " << tt.count("model") << " (uncertain: best and runner-up 90 % "
    << "intervals overlap: " << t.uncertain_cells() << ", chosen without a strategy TensorRT-LLM cannot run there: "
    << tt.excluded_choices() << ")";
  if (tt.base) s << "; kept from the --base file: " << tt.count("base") << ", its value would throw (NCCL instead): " << tt.count("base-would-throw");
  else s << "; without any model (fallback " << comment_text(t.options.fallback, CommentSyntax::Cpp) << "): " << tt.count("fallback");
  s << "; NVFP4 cells NCCL by TensorRT-LLM's SM90 rule: " << tt.count("nvfp4-below-sm100")
    << "; decided by TensorRT-LLM's size gate (NCCL): " << tt.count("engine-size-gate") << " wholly, " << tt.gated(GateCover::Part)
    << " partly";
  if (tt.transferred() > 0) s << "; " << kTransferredCellsNote << ": " << tt.transferred();
  return s.str();
}

std::string table_comment(const TrtllmTable& tt, const Banner& banner) {
  std::ostringstream s;
  s << banner_text(banner, "// ", "TensorRT-LLM all-reduce strategy lookup table " + table_name(tt) + ", chosen from fitted models.");
  s << comment_lines(cells_line(tt), "// ", 118);
  for (const auto& [target, from] : tt.sources)
    s << "// " << comment_text(target, CommentSyntax::Cpp) << " (" << code_of(target)
      << ") from the models of: " << comment_text(join(from, ", "), CommentSyntax::Cpp) << "\n";
  s << "// Strategy numbers (AllReduceStrategyType): NCCL=0, ONESHOT=4, TWOSHOT=5, NCCL_SYMMETRIC=8\n";
  for (const auto& note : trtllm_engine_notes(tt.version, tt.table_sm, tt.table.options.dtype)) s << comment_lines(note, "// ", 118);
  return s.str();
}

std::string table_definition(const TrtllmTable& tt) {
  const Grid& g = tt.table.grid;
  std::ostringstream s;
  s << "inline AllReduceBestStrategyTableType " << table_name(tt) << " = {\n";
  for (std::size_t ti = 0; ti < g.tps.size(); ++ti) {
    s << "    {\n        // TP=" << g.tps[ti] << "\n";
    for (std::size_t fi = 0; fi < g.fusions.size(); ++fi) {
      s << "        { // Fusion=" << to_string(g.fusions[fi]) << "\n";
      for (std::size_t hi = 0; hi < g.hiddens.size(); ++hi) {
        s << "            {";
        for (std::size_t ki = 0; ki < g.tokens.size(); ++ki) s << (ki ? "," : "") << tt.cells[g.index(ti, fi, hi, ki)].code;
        s << "}" << (hi + 1 < g.hiddens.size() ? "," : "") << " // hidden_size=" << g.hiddens[hi] << "\n";
      }
      s << "        }" << (fi + 1 < g.fusions.size() ? "," : "") << "\n";
    }
    s << "    }" << (ti + 1 < g.tps.size() ? "," : "") << "\n";
  }
  s << "};\n";
  return s.str();
}

}  // namespace

std::string write_trtllm(const TrtllmTable& tt, const Banner& banner) {
  const Grid& g = tt.table.grid;
  if (!is_trtllm_grid(g))
    throw std::invalid_argument("the trtllm table needs TensorRT-LLM's axes (TP 2,4,8; four fusions; hidden 128:8192; tokens 1:16384)");
  std::string comment = table_comment(tt, banner);
  if (tt.base) {
    std::vector<int> codes;
    for (const auto& c : tt.cells) codes.push_back(c.code);
    comment += "// Install: this is the --base file with " + table_name(tt) + " written in place (every other byte as it\n"
               "// was): copy it over cpp/tensorrt_llm/common/customAllReduceUtils.h and rebuild.\n";
    return patch_trtllm_base(*tt.base, codes, comment);
  }
  std::ostringstream s;
  s << comment;
  s << "// Install: replace the definition of " << table_name(tt) << " in cpp/tensorrt_llm/common/customAllReduceUtils.h\n";
  s << "// with the one below and rebuild (or give that file with --base to get it whole, its other values kept).\n";
  s << "//\n";
  s << "// AllReduce lookup: [tp][fusion][hidden][tokens] = strategy\n";
  s << "// TP:[" << join(g.tps, ", ") << "]\n";
  s << "// Fusion:['NONE', 'RESIDUAL_RMS_NORM', 'RESIDUAL_RMS_NORM_QUANT_FP8', 'RESIDUAL_RMS_NORM_QUANT_NVFP4']\n";
  s << "// Hidden:[" << join(g.hiddens, ", ") << "]\n";
  s << "// Tokens:[" << join(g.tokens, ", ") << "]\n";
  s << "#include <vector>\n\n";
  s << "// Same alias as TensorRT-LLM's customAllReduceUtils.h (redeclaring an alias of the same type is allowed).\n";
  s << "using AllReduceBestStrategyTableType = std::vector<std::vector<std::vector<std::vector<int>>>>;\n\n";
  s << table_definition(tt);
  return s.str();
}

namespace {

FormatOutput generate_trtllm(const FormatInput& in) {
  const Request& r = in.request;
  require_trtllm_axes(r, "the trtllm table always has TensorRT-LLM's axes");
  refuse_size_options(r, "trtllm");
  refuse_tuner_options(r, "trtllm");
  const TrtllmTable t = build_trtllm_table(in.models, r);
  if (!t.unmapped.empty())
    throw std::invalid_argument("--map: the models hold strategies TensorRT-LLM has no number for: " + join(t.unmapped, ", ") +
                                "; map each onto one of NCCL, ONESHOT, TWOSHOT, NCCL_SYMMETRIC (e.g. --map " +
                                t.unmapped.front() + "=ONESHOT) or leave it out (--map " + t.unmapped.front() + "=ignore)");
  if (t.count("model") == 0)
    throw std::invalid_argument("no cell of the grid has a modelled all-reduce strategy for system '" + t.table.options.system +
                                "' among NCCL, ONESHOT, TWOSHOT, NCCL_SYMMETRIC and the --map'ped ones" +
                                (t.base ? " (with --base, a cell is arfit's where at least two of them are predicted)" : ""));
  Banner b = in.banner;
  const std::string sm_note = "--sm " + std::to_string(r.sm) + " -> " + table_name(t) +
                              (r.sm != t.table_sm ? " (TensorRT-LLM reads its SM90 table for every SM below 100 and its "
                                                    "SM100 table from 100 up)"
                                                  : "");
  b.notes.push_back(sm_note);
  if (!t.not_from_table.empty())
    b.notes.push_back("Left out: " + join(t.not_from_table, ", ") + " -- TensorRT-LLM runs LOWPRECISION (6) only as the "
                      "AllReduce module's configured strategy (its buffers are allocated only then), never from this "
                      "table, and its results are not exact");
  std::ostringstream s;
  s << t.cells.size() << " cells: " << t.count("model") << " arfit's (" << t.table.uncertain_cells() << " uncertain), ";
  if (t.base) s << t.count("base") << " kept from " << t.base->path << ", " << t.count("base-would-throw") << " of its values NCCL (they would throw), ";
  else s << t.count("fallback") << " without a model (fallback " << t.table.options.fallback
         << (t.count("fallback") > 0 ? "; --base customAllReduceUtils.h keeps TensorRT-LLM's own values there" : "") << "), ";
  s << t.count("nvfp4-below-sm100") << " NVFP4 cells NCCL by TensorRT-LLM's SM90 rule, " << t.count("engine-size-gate")
    << " TensorRT-LLM's own (size gate)";
  if (t.excluded_choices() > 0) s << ", " << t.excluded_choices() << " without a faster strategy TensorRT-LLM cannot run there";
  if (t.transferred() > 0) s << ", " << t.transferred() << " " << kTransferredCellsNote;
  s << "; rules of TensorRT-LLM " << t.version.commit << "; " << sm_note;
  return {write_trtllm(t, b), s.str()};
}

}  // namespace

FormatSpec trtllm_format() {
  return {"trtllm",
          "TensorRT-LLM AllReduceBestStrategyTableSM<90|100> (always TensorRT-LLM's axes; --map for strategies it has "
          "no number for)",
          &generate_trtllm};
}

}  // namespace arfit::codegen
