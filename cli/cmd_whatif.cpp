// arfit whatif PROFILE --models MODELS.json --tp N [--sm S]: the profile's communication re-predicted at
// another tensor-parallel size (and SM) with the fitted models, per phase, with 90 % intervals.
#include <algorithm>
#include <iostream>
#include <memory>

#include "cli/cli_inputs.h"
#include "cli/commands.h"
#include "cli/trace_inputs.h"
#include "model/atomic_file.h"
#include "model/errors.h"
#include "model/group_model.h"
#include "model/model_set.h"
#include "trace/classify.h"
#include "trace/load.h"
#include "trace/whatif.h"

namespace arfit::cli {
namespace {

struct WhatIfArgs {
  std::string profile, models, rules, format = "auto", nvtx, out_csv, system, strategy, dtype = "bf16";
  int tp = 0, sm = 0, nnodes = 1;
  std::int64_t hidden = 0, tokens = 0, batch_size = 0, prompt_len = 0;
  std::vector<std::string> fold, phases;
};

void run_whatif(const WhatIfArgs& a) {
  if (a.tp <= 0) throw UsageError("--tp must be a positive rank count");
  nodes_option(a.nnodes, a.tp, "--tp");
  if (dtype_size(a.dtype) <= 0) throw UsageError("unknown --dtype '" + a.dtype + "'");
  if (a.prompt_len > 0 && a.batch_size <= 0) throw UsageError("--prompt-len needs --batch-size (prefill tokens = batch x prompt_len)");
  trace::RuleTable rules = a.rules.empty() ? trace::RuleTable::defaults() : trace::RuleTable::load_user(a.rules);
  trace::Profile prof = load_profile_phases(a.profile, a.format, a.nvtx, a.phases);
  warn_folds_matching_nothing(prof, a.fold, "whatif");
  // Token counts the profile does not carry (nsys): from --batch-size/--prompt-len.
  if (a.batch_size > 0) {
    prof.context.batch_size = a.batch_size;
    if (a.prompt_len > 0) prof.context.prompt_len = a.prompt_len;
    for (auto& p : prof.phases) {
      if (p.kind == trace::PhaseKind::Decode) p.tokens = a.batch_size;
      if (p.kind == trace::PhaseKind::Prefill && prof.context.prompt_len > 0) p.tokens = a.batch_size * prof.context.prompt_len;
    }
  }
  ModelSet models = ModelSet::load(a.models);
  // The machine and the all-reduce strategy asked for must be in the models file: a misspelt one would leave every
  // collective "kept as measured" and look like an answer.
  const std::string system = system_option(models, a.system);
  if (!a.strategy.empty())
    strategy_option(a.strategy, models.strategies(system, Collective::AllReduce),
                          "an all-reduce strategy of " + a.models + (system.empty() ? std::string() : " for " + system));
  if (!a.out_csv.empty()) check_output_file(a.out_csv);  // refused now (e.g. the profile itself), not after predicting

  trace::WhatIfOptions opt;
  opt.tp = a.tp;
  opt.sm = a.sm;
  opt.nnodes = a.nnodes;
  opt.system = system;
  opt.dtype = a.dtype;
  opt.hidden = a.hidden;
  opt.tokens = a.tokens;
  opt.strategy = a.strategy;
  opt.fold = a.fold;
  trace::WhatIfResult r;
  try {
    r = trace::what_if(prof, rules, opt, [&](const PredictQuery& q) { return models.predict(q); },
                       [&](const PredictQuery& q) { return models.across_nodes_refusal(q); });
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  std::cout << trace::format_what_if(r, prof, opt);
  if (!a.out_csv.empty()) {
    write_string_atomically(a.out_csv, trace::what_if_phases_csv(r));
    std::cout << "wrote " << a.out_csv << "\n";
  }
}

// Token counts and sizes: at least 1, and small enough that batch x prompt_len x hidden x dtype size stays a
// finite number of bytes in int64 arithmetic (2^31 each).
const CLI::Range kPositiveCount(std::int64_t{1}, std::int64_t{1} << 31);

void add_whatif(CLI::App& app) {
  auto a = std::make_shared<WhatIfArgs>();
  auto* cmd = app.add_subcommand(
      "whatif", "Re-predict a profile's communication at another TP size / SM with fitted models (per phase, 90 % intervals)");
  cmd->add_option("profile", a->profile, "vLLM layerwise profile JSON, or nsys stats CSV")->required()->check(input_file_validator());
  cmd->add_option("--models", a->models, "Fitted models (models.json from arfit fit)")->required()->check(input_file_validator());
  cmd->add_option("--tp", a->tp, "Tensor-parallel size (rank count) to predict at")->required()->check(CLI::Range(1, kMaxModelRanks));
  cmd->add_option("--sm", a->sm, "SM version to predict for (e.g. 100); default: the models' measured SM")
      ->check(known_sm_validator());
  cmd->add_option("--nnodes", a->nnodes, "Node count of the predicted setup")
      ->capture_default_str()
      ->check(CLI::Range(1, kMaxModelRanks));
  cmd->add_option("--hidden", a->hidden,
                  "Hidden size: message bytes = phase tokens x hidden x dtype size, for collectives whose size the profile does not record")
      ->check(kPositiveCount);
  cmd->add_option("--dtype", a->dtype,
                  "Activation dtype, for collectives whose element type neither the profile nor the kernel name (NCCL's "
                  "AllReduce_Sum_bf16) says")
      ->capture_default_str();
  cmd->add_option("--tokens", a->tokens,
                  "Tokens per call, overriding the profile's (batch x prompt_len for prefill, batch for decode); alone enough "
                  "for a kernel summary, which has no phases")
      ->check(kPositiveCount);
  cmd->add_option("--batch-size", a->batch_size, "Batch size, for profiles without a context (nsys): decode tokens = batch")
      ->check(kPositiveCount);
  cmd->add_option("--prompt-len", a->prompt_len, "Prompt length, for profiles without a context: prefill tokens = batch x prompt_len")
      ->check(kPositiveCount);
  cmd->add_option("--system", a->system, "System of the model set to predict with (default: the only one; required when it holds several)");
  cmd->add_option("--strategy", a->strategy, "All-reduce strategy to predict with, one the models file has (NCCL, ONESHOT, TWOSHOT, ...); default: as measured");
  cmd->add_option("--rules", a->rules, "Extra kernel-classification rules (JSON), tried before the built-in ones")->check(input_file_validator());
  cmd->add_option("--fold", a->fold, "Node names folded into one leaf (their kernels are not re-predicted)");
  cmd->add_option("--phase", a->phases, "Only these phases (default: all)");
  cmd->add_option("--format", a->format, "Profile format")->check(CLI::IsMember({"auto", "vllm", "nsys"}))->capture_default_str();
  cmd->add_option("--nvtx", a->nvtx, "nsys NVTX range report CSV to split a cuda_gpu_trace into phases; refused with other profiles");
  cmd->add_option("-o,--out", a->out_csv, "Also write the per-phase table as CSV (atomically; '-': standard output, the report then on stderr)");
  cmd->callback([a] { run_whatif(*a); });
}

}  // namespace
}  // namespace arfit::cli

ARFIT_REGISTER_COMMAND(whatif, 610, arfit::cli::add_whatif);
