// arfit codegen MODELS.json --format FORMAT -o FILE [grid options]
// Writes the strategy table chosen from fitted models in the form an inference engine or NCCL reads (the formats
// are in codegen/, one file each). Output is deterministic: the banner date comes from --date,
// SOURCE_DATE_EPOCH or the models file, never from the wall clock.
#include <algorithm>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>

#include "cli/cli_inputs.h"
#include "cli/commands.h"
#include "codegen/codegen.h"
#include "io/input_file.h"
#include "io/output_path_rule.h"
#include "io/atomic_output.h"
#include "model/errors.h"

namespace arfit::cli {
namespace {

struct CodegenArgs {
  std::string models;
  std::string format;
  std::string output;
  codegen::Request request;
};

void add_grid_options(CLI::App* cmd, codegen::Request& r) {
  cmd->add_option("--system", r.system, "System (model set label) to generate for; default: the only one in the file");
  cmd->add_option("--sm", r.sm,
                  "SM of the consumer: trtllm maps it to the table TensorRT-LLM reads (below 100 -> SM90, else SM100); "
                  "vllm writes it as the capability key (90 -> \"9.0\"), sglang as the arch; one of the SMs arfit knows "
                  "(80, 89, 90, 100, 103, 120)")
      ->capture_default_str()
      ->check(known_sm_validator());
  cmd->add_flag("--transfer-sm", r.transfer_sm,
                "Predict for --sm (transferring models measured on another SM, flagged extrapolated) instead of the measured SM");
  cmd->add_option("--tp", r.tp, "TP sizes (GPU counts, at most 2^20), comma-separated (trtllm: always 2,4,8)")->capture_default_str();
  cmd->add_option("--fusion", r.fusion,
                  "Fusion ops, comma-separated (NONE, RESIDUAL_RMS_NORM, RESIDUAL_RMS_NORM_QUANT_FP8, "
                  "RESIDUAL_RMS_NORM_QUANT_NVFP4) or 'all'; the table keeps TensorRT-LLM's order (trtllm: always all)")
      ->capture_default_str();
  cmd->add_option("--hidden", r.hidden,
                  "Hidden sizes: LO:HI (powers of two between) or a comma list of powers of two (8K = 8192: K M G T, powers of 1024), at most 2^40 "
                  "(trtllm: always 128:8192)")
      ->capture_default_str();
  cmd->add_option("--tokens", r.tokens,
                  "Token counts: LO:HI (powers of two between) or a comma list of powers of two (16K = 16384), at most 2^40; the "
                  "largest tokens x hidden x dtype size at most 1e18 bytes, the grid (--tp x --fusion x --hidden x --tokens) at "
                  "most 1e6 cells (trtllm: always 1:16384)")
      ->capture_default_str();
  cmd->add_option("--dtype", r.dtype, "Element type of the reduced tensor (bytes = tokens x hidden x size); strategies without a model of this type are asked for another type of the same size (fp16 NCCL tables next to bf16 kernels)")->capture_default_str();
  cmd->add_option("--fallback", r.fallback, "trtllm, header, json (refused by the others): strategy for cells no model can predict, and off the table in the header: an all-reduce strategy of the models, NCCL, NCCL_SYMMETRIC, a forced NCCL_<algorithm>_<protocol>, ONESHOT or TWOSHOT")
      ->capture_default_str();
  cmd->add_option("--date", r.date,
                  "Date for the banner (YYYY-MM-DD); default: SOURCE_DATE_EPOCH, else the models file's date/mtime");
}

void run_codegen(CodegenArgs a) {
  try {
    codegen::find_format(a.format);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  // The output path is checked right after the input is read (it may not be the input), before any work.
  std::string text;
  try {
    text = read_file(a.models);
  } catch (const std::exception& e) {
    throw InputError(a.models, 0, "", e.what());
  }
  // The consumer's own file is an input too: read before the output path is checked, so that the output can
  // never replace it (write elsewhere, then copy it over the engine's file).
  if (!a.request.base_path.empty()) a.request.base_text = read_input_file(a.request.base_path);
  check_output_file(a.output);
  const ModelSet models = ModelSet::load(a.models);
  a.request.models_path = a.models;
  a.request.command = codegen::codegen_command_line(a.models, a.format, a.request);
  std::string out, summary;
  try {
    out = codegen::generate(models, a.request, a.format, text, &summary);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  write_string_atomically(a.output, out);
  std::cout << "wrote " << a.output << " (" << a.format << "): " << summary << "\n";
}

std::string formats_help() {
  std::string s;
  for (const auto& f : codegen::output_formats()) s += "  " + f.name + std::string(12 - std::min<std::size_t>(11, f.name.size()), ' ') + f.description + "\n";
  return s;
}

void add_codegen(CLI::App& app) {
  auto args = std::make_shared<CodegenArgs>();
  auto* cmd = app.add_subcommand("codegen", "Generate strategy tables from fitted models for TensorRT-LLM, NCCL, vLLM, SGLang, FlashInfer (and a C++ header, JSON)");
  cmd->footer("FORMAT:\n" + formats_help() + "docs/codegen.md shows a sample of each and how to install it.");
  cmd->add_option("models", args->models, "Models file written by `arfit fit`")->required()->check(input_file_validator());
  cmd->add_option("--format", args->format, codegen::format_names())->required();
  cmd->add_option("-o,--output", args->output, "Output file (written atomically; '-': standard output, the report then on stderr)")->required();
  add_grid_options(cmd, args->request);
  cmd->add_option("--map", args->request.map,
                  "MODEL_STRATEGY=TARGET, repeatable: trtllm/json: a TensorRT-LLM strategy (NCCL, ONESHOT, TWOSHOT, "
                  "NCCL_SYMMETRIC) or 'ignore'; vllm: custom|nccl|oneshot|twoshot; sglang: custom_graph|custom_eager|nccl; "
                  "flashinfer: oneshot|twoshot")
      ->allow_extra_args(false);
  cmd->add_option("--consumer-version", args->request.consumer_version,
                  "The consumer's version the file is for; a version whose rules arfit has not read is refused. trtllm/json: "
                  "a TensorRT-LLM commit (10a94126 newest, 01e2c361, 005b299b); vllm: 0.10.2 to 0.33.0; sglang: a configs "
                  "snapshot (s1-0fbab45d, s2-09e7d8ed, s3-dict-configs, s4-two-shot-push; default: all); flashinfer: 0.5.0 "
                  "to 0.6.18; nccl-tuner: NCCL 2.30.3 to 2.30.7 (the example plugin). Default: the newest read");
  cmd->add_option("--base", args->request.base_path,
                  "trtllm/json: TensorRT-LLM's customAllReduceUtils.h -- the output is that file with the table written in "
                  "place, its values kept where no model decides and its own size gate followed; vllm: its "
                  "all_reduce_utils.py; flashinfer: its comm/trtllm_ar.py (their current values fill the world sizes "
                  "arfit does not decide)")
      ->check(input_file_validator());
  cmd->add_option("--bytes", args->request.bytes,
                  "nccl-tuner, vllm, sglang, flashinfer (refused by the others): message sizes LO:HI (powers of two; 4G = 2^32) the thresholds are computed on")
      ->capture_default_str();
  cmd->add_option("--nnodes", args->request.nnodes, "nccl-tuner (refused by the others): nNodes of the rules and of the models asked")->capture_default_str();
  cmd->add_option("--channels", args->request.channels,
                  "nccl-tuner (refused by the others): channels field of every rule; 0 = NCCL's own channel count (the example plugin's -1 "
                  "would leave the 1 channel it sets before matching)")
      ->capture_default_str();
  cmd->callback([args] { run_codegen(*args); });
}

}  // namespace
}  // namespace arfit::cli

ARFIT_REGISTER_COMMAND(codegen, 400, arfit::cli::add_codegen);
