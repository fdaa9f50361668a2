// One models file, one answer (agreement_checks.h): `arfit predict`, `arfit suggest` and `arfit codegen` (its json
// and header formats) agree on the same cell. Models fitted to every public aiconfigurator system (all its files,
// as `arfit fit aic_<system>_*.txt`); a seeded random set of cells of a grid reaching off the measured one (TP 3, 6
// and 16 through the joint fit across GPU counts, hidden 64 and 16384, tokens 32768), the cells where two
// strategies are within 1 %, and bf16 / fp16 / int8 (the NCCL tables are fp16 and int8, the custom kernels fp16 or
// bf16: the same-element-size rule answers). test_machines_data.cpp checks every cell of the default grid, and
// the machines fitted from anchors:3 with priors. Label data; skipped when ../shared/data/public is absent.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <iterator>
#include <optional>
#include <random>

#include "agreement_checks.h"
#include "codegen/codegen.h"
#include "fit/fit.h"
#include "ingest/ingest.h"
#include "test_support.h"

using namespace arfit;
using codegen::Request;
using codegen::StrategyTable;

namespace {

const std::vector<std::string> kSystems{"a100_sxm", "b200_sxm", "b300_sxm", "gb200", "gb300",
                                        "h100_sxm", "h200_sxm", "l40s", "rtx_pro_6000_server"};

// Every aiconfigurator file of `system`, fitted as `arfit fit` fits them; nullopt when the data is absent.
std::optional<ModelSet> fitted_system(const std::string& system) {
  const std::string root = arfit::testing::public_data_dir();
  if (root.empty()) return std::nullopt;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(std::filesystem::path(root) / "aiconfigurator"))
    if (e.path().filename().string().rfind("aic_" + system + "_", 0) == 0) files.push_back(e.path().string());
  if (files.empty()) return std::nullopt;
  std::sort(files.begin(), files.end());
  fit::FitOptions o;
  o.threads = 2;
  return fit::fit_model_set(ingest::load_samples(files), o);
}

}  // namespace

TEST(CommandsAgreeData, PredictSuggestCodegenJsonAndHeaderSayTheSameForEveryCell) {
  std::mt19937 rng(20261124);
  int checked = 0, near_ties = 0, systems = 0;
  for (const auto& system : kSystems) {
    const std::optional<ModelSet> models = fitted_system(system);
    if (!models) continue;
    ++systems;
    for (const std::string dtype : {"bf16", "fp16", "int8"}) {
      Request r;
      r.tp = "2,3,4,6,8,16";
      r.hidden = "64:16384";
      r.tokens = "1:32768";
      r.dtype = dtype;
      r.date = "2026-01-01";
      r.models_path = system + ".json";
      // A seeded random set of modelled cells, and of the cells where two strategies are within 1 %.
      checked += agreement_checks::check_commands_agree(*models, system, r, [&](const StrategyTable& t) {
        std::vector<std::size_t> modelled, ties;
        for (std::size_t i = 0; i < t.cells.size(); ++i) {
          if (t.cells[i].fallback) continue;
          modelled.push_back(i);
          if (!t.cells[i].runner_up.empty() && t.cells[i].margin < 0.01) ties.push_back(i);
        }
        EXPECT_FALSE(modelled.empty()) << system << " --dtype " << dtype;
        std::vector<std::size_t> cells;
        std::sample(modelled.begin(), modelled.end(), std::back_inserter(cells), 12, rng);
        std::sample(ties.begin(), ties.end(), std::back_inserter(cells), 4, rng);
        near_ties += static_cast<int>(std::min<std::size_t>(ties.size(), 4));
        return cells;
      });
    }
  }
  if (systems == 0) GTEST_SKIP() << "public aiconfigurator tables absent";
  std::cout << systems << " systems, " << checked << " cells (" << near_ties << " within 1 %) agree\n";
  EXPECT_GT(checked, 300);
  EXPECT_GT(near_ties, 20);
}
