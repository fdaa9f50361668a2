// arfit codegen MODELS.json --format trtllm|header|nccl-tuner|json -o FILE [grid options]
// Writes the strategy table chosen from fitted models in the form an inference engine or NCCL reads
// (the work is in codegen/codegen.h). Output is deterministic: the banner date comes from --date,
// SOURCE_DATE_EPOCH or the models file, never from the wall clock.
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include "cli/commands.h"
#include "codegen/codegen.h"
#include "model/atomic_file.h"
#include "model/errors.h"

namespace arfit::cli {
namespace {

struct CodegenArgs {
  std::string models;
  std::string format;
  std::string output;
  codegen::Request request;
};

// The options shared with `arfit suggest`.
void add_grid_options(CLI::App* cmd, codegen::Request& r) {
  cmd->add_option("--system", r.system, "System (model set label) to generate for; default: the only one in the file");
  cmd->add_option("--sm", r.sm, "SM version naming the TensorRT-LLM table (AllReduceBestStrategyTableSM<sm>)")->capture_default_str();
  cmd->add_flag("--transfer-sm", r.transfer_sm,
                "Predict for --sm (transferring models measured on another SM, flagged extrapolated) instead of the measured SM");
  cmd->add_option("--tp", r.tp, "TP sizes (GPU counts), comma-separated")->capture_default_str();
  cmd->add_option("--fusion", r.fusion,
                  "Fusion ops, comma-separated (NONE, RESIDUAL_RMS_NORM, RESIDUAL_RMS_NORM_QUANT_FP8, "
                  "RESIDUAL_RMS_NORM_QUANT_NVFP4) or 'all'; the table keeps TensorRT-LLM's order")
      ->capture_default_str();
  cmd->add_option("--hidden", r.hidden, "Hidden sizes: LO:HI (powers of two between) or a comma list of powers of two")
      ->capture_default_str();
  cmd->add_option("--tokens", r.tokens, "Token counts: LO:HI (powers of two between) or a comma list of powers of two")
      ->capture_default_str();
  cmd->add_option("--dtype", r.dtype, "Element type of the reduced tensor (bytes = tokens x hidden x size); strategies without a model of this type are asked for another type of the same size (fp16 NCCL tables next to bf16 kernels)")->capture_default_str();
  cmd->add_option("--fallback", r.fallback, "Strategy for cells no model can predict, and off-grid in the header")
      ->capture_default_str();
  cmd->add_option("--date", r.date,
                  "Date for the banner (YYYY-MM-DD); default: SOURCE_DATE_EPOCH, else the models file's date/mtime");
}

std::string command_line(const CodegenArgs& a) {
  const auto& r = a.request;
  std::string s = "arfit codegen " + a.models + " --format " + a.format + " --sm " + std::to_string(r.sm) +
                  (r.transfer_sm ? " --transfer-sm" : "") + " --tp " + r.tp + " --fusion " + r.fusion + " --hidden " +
                  r.hidden + " --tokens " + r.tokens + " --dtype " + r.dtype + " --fallback " + r.fallback;
  if (!r.system.empty()) s += " --system " + r.system;
  if (a.format == "nccl-tuner") s += " --bytes " + r.bytes + " --nnodes " + std::to_string(r.nnodes);
  return s;
}

void run_codegen(CodegenArgs a) {
  codegen::Format format;
  try {
    format = codegen::parse_format(a.format);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  std::string text;
  try {
    text = read_file(a.models);
  } catch (const std::exception& e) {
    throw InputError(a.models, 0, "", e.what());
  }
  const ModelSet models = ModelSet::load(a.models);
  a.request.models_path = a.models;
  a.request.command = command_line(a);
  std::string out, summary;
  try {
    out = codegen::generate(models, a.request, format, text, &summary);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  write_string_atomically(a.output, out);
  std::cout << "wrote " << a.output << " (" << a.format << "): " << summary << "\n";
}

void add_codegen(CLI::App& app) {
  auto args = std::make_shared<CodegenArgs>();
  auto* cmd = app.add_subcommand("codegen", "Generate strategy tables from fitted models (TensorRT-LLM table, C++ header, NCCL tuner config, JSON)");
  cmd->add_option("models", args->models, "Models file written by `arfit fit`")->required()->check(CLI::ExistingFile);
  cmd->add_option("--format", args->format,
                  "trtllm: TensorRT-LLM AllReduceBestStrategyTableSM<sm>; header: self-contained arfit_select.h; "
                  "nccl-tuner: CSV for NCCL's example tuner plugin; json: every cell with predictions and margins")
      ->required();
  cmd->add_option("-o,--output", args->output, "Output file (written atomically)")->required();
  add_grid_options(cmd, args->request);
  cmd->add_option("--bytes", args->request.bytes, "nccl-tuner: message sizes LO:HI (powers of two) the rules are computed on")
      ->capture_default_str();
  cmd->add_option("--nnodes", args->request.nnodes, "nccl-tuner: nNodes of the rules and of the models asked")->capture_default_str();
  cmd->callback([args] { run_codegen(*args); });
}

}  // namespace
}  // namespace arfit::cli

ARFIT_REGISTER_COMMAND(codegen, 400, arfit::cli::add_codegen);
