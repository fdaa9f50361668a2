// arfit suggest MODELS.json [grid options] [--top N] [--json FILE]
// Lists the uncertain cells of the strategy table (best and runner-up 90 % prediction intervals overlap),
// ranked by expected regret: the measurements that would most improve the table.
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include "cli/cli_inputs.h"
#include "cli/commands.h"
#include "codegen/codegen.h"
#include "io/output_path_rule.h"
#include "io/atomic_output.h"
#include "model/json_input.h"

namespace arfit::cli {
namespace {

struct SuggestArgs {
  std::string models;
  int top = 20;
  std::string json;
  codegen::Request request;
};

void run_suggest(SuggestArgs a) {
  if (a.top < 0) throw UsageError("--top must be >= 0");
  const ModelSet models = ModelSet::load(a.models);
  // --json may not be the models file, a folder or a device: refused (exit 2) before the table is built or printed.
  if (!a.json.empty()) check_output_file(a.json);
  a.request.models_path = a.models;
  codegen::StrategyTable t;
  try {
    t = codegen::build_request_table(models, a.request);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  const auto cells = codegen::suggest_cells(t, a.top);
  std::cout << codegen::format_suggestions(t, cells);
  if (!a.json.empty()) write_string_atomically(a.json, json_document_text(codegen::suggestions_json(t, cells)));
}

void add_suggest(CLI::App& app) {
  auto args = std::make_shared<SuggestArgs>();
  auto* cmd = app.add_subcommand("suggest", "List the uncertain cells of the strategy table, ranked by expected regret (what to measure next)");
  cmd->add_option("models", args->models, "Models file written by `arfit fit`")->required()->check(input_file_validator());
  cmd->add_option("--top", args->top, "How many cells to list (0 = all uncertain cells)")->capture_default_str();
  cmd->add_option("--json", args->json, "Also write the list as JSON to this file ('-': standard output, the list then on stderr)");
  auto& r = args->request;
  cmd->add_option("--system", r.system, "System (model set label); default: the only one in the file");
  cmd->add_option("--sm", r.sm, "SM version (used with --transfer-sm): 80, 89, 90, 100, 103 or 120")
      ->capture_default_str()
      ->check(known_sm_validator());
  cmd->add_flag("--transfer-sm", r.transfer_sm, "Predict for --sm instead of the measured SM");
  cmd->add_option("--tp", r.tp, "TP sizes (GPU counts, at most 2^20), comma-separated")->capture_default_str();
  cmd->add_option("--fusion", r.fusion, "Fusion ops, comma-separated, or 'all'")->capture_default_str();
  cmd->add_option("--hidden", r.hidden, "Hidden sizes: LO:HI powers of two, or a comma list (at most 2^40)")->capture_default_str();
  cmd->add_option("--tokens", r.tokens, "Token counts: LO:HI powers of two, or a comma list (at most 2^40; tokens x hidden x dtype size at most 1e18 bytes; the grid, --tp x --fusion x --hidden x --tokens, at most 1e6 cells)")->capture_default_str();
  cmd->add_option("--dtype", r.dtype, "Element type of the reduced tensor")->capture_default_str();
  cmd->callback([args] { run_suggest(*args); });
}

}  // namespace
}  // namespace arfit::cli

ARFIT_REGISTER_COMMAND(suggest, 410, arfit::cli::add_suggest);
