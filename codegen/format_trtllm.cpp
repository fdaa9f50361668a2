// --format trtllm: TensorRT-LLM's AllReduceBestStrategyTableSM<90|100> (cpp/tensorrt_llm/common/
// customAllReduceUtils.h). Its lookup, selectStrategyLookUpTable, indexes purely by position -- TP by
// log2(tp) - 1, fusion by its own order, hidden by log2(hidden) - 7, tokens by log2(tokens) -- and reads only the
// SM90 and SM100 tables, so the table always has its full axes and strategies it can number.
#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "codegen/formats.h"
#include "codegen/safe_text.h"
#include "codegen/writers.h"
#include "model/text.h"

namespace arfit::codegen {

int trtllm_fusion_op(FusionOp fusion) {
  switch (fusion) {
    case FusionOp::None: return 0;
    case FusionOp::ResidualRmsNorm: return 1;
    case FusionOp::ResidualRmsNormQuantFp8: return 4;
    case FusionOp::ResidualRmsNormQuantNvfp4: return 5;
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

int TrtllmTable::count(const std::string& rule) const {
  return static_cast<int>(std::count_if(cells.begin(), cells.end(), [&](const TrtllmCell& c) { return c.rule == rule; }));
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
void require_trtllm_axes(const Request& r) {
  const Grid g = request_grid(r), t;
  auto refuse = [](const std::string& option, const std::string& axis) {
    throw std::invalid_argument(option + ": the trtllm table always has TensorRT-LLM's axes (" + axis +
                                "): its lookup indexes the table by position, so other values would be misread; "
                                "use --format header or json for another grid");
  };
  if (g.tps != t.tps) refuse("--tp", "TP 2,4,8");
  if (g.fusions != t.fusions) refuse("--fusion", "all four fusion ops in TensorRT-LLM's order");
  if (g.hiddens != t.hiddens) refuse("--hidden", "hidden 128:8192");
  if (g.tokens != t.tokens) refuse("--tokens", "tokens 1:16384");
}

}  // namespace

TrtllmTable trtllm_codes(const StrategyTable& table, int sm) {
  TrtllmTable t;
  t.table = table;
  t.table_sm = trtllm_table_sm(sm);
  t.cells.reserve(table.cells.size());
  for (const auto& c : table.cells) {
    TrtllmCell tc;
    if (t.table_sm == 90 && c.fusion == FusionOp::ResidualRmsNormQuantNvfp4) {
      // TensorRT-LLM's own SM90 table holds NCCL in every NVFP4 cell (its fused NVFP4 kernels need SM100).
      tc.strategy = strategy::kNccl;
      tc.rule = "nvfp4-below-sm100";
    } else {
      tc.strategy = upper(c.choice);
      tc.rule = c.fallback ? "fallback" : "model";
    }
    tc.code = code_of(tc.strategy);
    t.cells.push_back(tc);
  }
  return t;
}

TrtllmTable build_trtllm_table(const ModelSet& models, const Request& r, const StrategyTable* all_strategies) {
  if (!trtllm_strategy_number(r.fallback))
    throw std::invalid_argument("--fallback: '" + r.fallback + "' has no TensorRT-LLM number (NCCL, ONESHOT, TWOSHOT, NCCL_SYMMETRIC)");
  const std::string system = resolve_system(models, r.system);
  const auto strategies = system_strategies(models, system);
  const auto explicit_map = parse_map_options(r.map, strategies, trtllm_map_targets());
  StrategySources sources;
  std::vector<std::string> unmapped;
  for (const auto& s : strategies) {
    const auto it = explicit_map.find(s);
    if (it != explicit_map.end()) {
      if (it->second != "ignore") sources[it->second].push_back(s);
    } else if (trtllm_strategy_number(s)) {
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
  TrtllmTable t = trtllm_codes(remap_table(*all_strategies, sources, upper(r.fallback)), r.sm);
  t.sources = std::move(sources);
  t.unmapped = std::move(unmapped);
  return t;
}

std::string write_trtllm(const TrtllmTable& tt, const Banner& banner) {
  const StrategyTable& t = tt.table;
  const Grid& g = t.grid;
  if (!is_trtllm_grid(g))
    throw std::invalid_argument("the trtllm table needs TensorRT-LLM's axes (TP 2,4,8; four fusions; hidden 128:8192; tokens 1:16384)");
  const std::string name = "AllReduceBestStrategyTableSM" + std::to_string(tt.table_sm);
  std::ostringstream s;
  s << banner_text(banner, "// ", "TensorRT-LLM all-reduce strategy lookup table " + name + ", chosen from fitted models.");
  s << "// Cells: " << t.cells.size() << ", uncertain (best and runner-up 90 % intervals overlap): " << t.uncertain_cells()
    << ", without any model (fallback " << comment_text(t.options.fallback, CommentSyntax::Cpp) << "): " << tt.count("fallback")
    << ", NVFP4 cells NCCL by TensorRT-LLM's SM90 rule: " << tt.count("nvfp4-below-sm100");
  if (tt.transferred() > 0) s << ", " << kTransferredCellsNote << ": " << tt.transferred();
  s << "\n";
  for (const auto& [target, from] : tt.sources)
    s << "// " << comment_text(target, CommentSyntax::Cpp) << " (" << code_of(target)
      << ") from the models of: " << comment_text(join(from, ", "), CommentSyntax::Cpp) << "\n";
  s << "// Strategy numbers (AllReduceStrategyType): NCCL=0, ONESHOT=4, TWOSHOT=5, NCCL_SYMMETRIC=8\n";
  s << "// Install: replace the definition of " << name << " in cpp/tensorrt_llm/common/customAllReduceUtils.h with\n";
  s << "// the one below and rebuild. Off this table TensorRT-LLM's lookup returns NCCL_SYMMETRIC.\n";
  s << "//\n";
  s << "// AllReduce lookup: [tp][fusion][hidden][tokens] = strategy\n";
  s << "// TP:[" << join(g.tps, ", ") << "]\n";
  s << "// Fusion:['NONE', 'RESIDUAL_RMS_NORM', 'RESIDUAL_RMS_NORM_QUANT_FP8', 'RESIDUAL_RMS_NORM_QUANT_NVFP4']\n";
  s << "// Hidden:[" << join(g.hiddens, ", ") << "]\n";
  s << "// Tokens:[" << join(g.tokens, ", ") << "]\n";
  s << "#include <vector>\n\n";
  s << "// Same alias as TensorRT-LLM's customAllReduceUtils.h (redeclaring an alias of the same type is allowed).\n";
  s << "using AllReduceBestStrategyTableType = std::vector<std::vector<std::vector<std::vector<int>>>>;\n\n";
  s << "inline AllReduceBestStrategyTableType " << name << " = {\n";
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

namespace {

FormatOutput generate_trtllm(const FormatInput& in) {
  const Request& r = in.request;
  require_trtllm_axes(r);
  refuse_size_options(r, "trtllm");
  refuse_tuner_options(r, "trtllm");
  const TrtllmTable t = build_trtllm_table(in.models, r);
  if (!t.unmapped.empty())
    throw std::invalid_argument("--map: the models hold strategies TensorRT-LLM has no number for: " + join(t.unmapped, ", ") +
                                "; map each onto one of NCCL, ONESHOT, TWOSHOT, NCCL_SYMMETRIC (e.g. --map " +
                                t.unmapped.front() + "=ONESHOT) or leave it out (--map " + t.unmapped.front() + "=ignore)");
  if (t.count("model") == 0)
    throw std::invalid_argument("no cell of the grid has a modelled all-reduce strategy for system '" + t.table.options.system +
                                "' among NCCL, ONESHOT, TWOSHOT, NCCL_SYMMETRIC and the --map'ped ones");
  Banner b = in.banner;
  const std::string name = "AllReduceBestStrategyTableSM" + std::to_string(t.table_sm);
  const std::string sm_note = "--sm " + std::to_string(r.sm) + " -> " + name +
                              (r.sm != t.table_sm ? " (TensorRT-LLM reads its SM90 table for every SM below 100 and its "
                                                    "SM100 table from 100 up)"
                                                  : "");
  b.notes.push_back(sm_note);
  std::ostringstream s;
  s << t.cells.size() << " cells, " << t.table.uncertain_cells() << " uncertain, " << t.count("fallback")
    << " without a model (fallback " << t.table.options.fallback << "), " << t.count("nvfp4-below-sm100")
    << " NVFP4 cells NCCL by TensorRT-LLM's SM90 rule";
  if (t.transferred() > 0) s << ", " << t.transferred() << " " << kTransferredCellsNote;
  s << "; " << sm_note;
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
