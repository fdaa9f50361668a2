// table_cell MODELS.json TP TOKENS HIDDEN [FUSION]
//
// The same cell as choose_allreduce, chosen the way `arfit codegen` chooses: through the codegen request API
// (arfit::codegen), which also reports the runner-up, the margin and whether the 90 % intervals overlap
// (an uncertain cell, worth measuring). Prints
//   choice ONESHOT runner_up TWOSHOT margin 0.1234 uncertain 0
#include <cstdio>
#include <exception>
#include <string>

#include "codegen/formats.h"
#include "codegen/request.h"
#include "model/model_set.h"

int main(int argc, char** argv) {
  if (argc < 5 || argc > 6) {
    std::fprintf(stderr, "usage: %s MODELS.json TP TOKENS HIDDEN [FUSION]\n", argv[0]);
    return 2;
  }
  try {
    const arfit::ModelSet models = arfit::ModelSet::load(argv[1]);
    arfit::codegen::Request request;  // the options of `arfit codegen`, one cell wide
    request.models_path = argv[1];
    request.tp = argv[2];
    request.tokens = argv[3];
    request.hidden = argv[4];
    request.fusion = argc > 5 ? argv[5] : "NONE";
    const arfit::codegen::StrategyTable table = arfit::codegen::build_request_table(models, request);
    const arfit::codegen::Cell& cell = table.cells.at(0);
    std::printf("choice %s runner_up %s margin %.6f uncertain %d\n", cell.choice.c_str(),
                cell.runner_up.empty() ? "-" : cell.runner_up.c_str(), cell.margin, cell.uncertain ? 1 : 0);
  } catch (const std::exception& e) {  // std::invalid_argument names the option (e.g. a tokens count not a power of two)
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
