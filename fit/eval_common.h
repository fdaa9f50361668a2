// Internal to fit/'s evaluation protocols (eval.cpp, eval_crossn.cpp, eval_crosshw.cpp): the pieces every
// protocol shares — the parallel loop (fit/parallel_for.h), per-curve predictions and their summary, method
// names. Log-log interpolation is model/interp.h's loglog_at. Not part of the public API (fit/eval.h is).
#pragma once

#include <string>
#include <vector>

#include "fit/eval.h"
#include "fit/parallel_for.h"
#include "model/interp.h"

namespace arfit::fit::detail {

// One curve's (or family's) held-out points under one method; ok == false: the method could not fit it.
struct CurvePreds {
  bool ok = false;
  std::vector<EvalPoint> points;
};

// Errors and interval coverage over the curves whose `include` flag is set (all when empty).
EvalMethodResult summarize(const std::string& name, const std::vector<CurvePreds>& per_curve, bool keep_points,
                           const std::vector<char>& include = {});

// Fit options of a family method name: "auto" (correction on), "auto-nc", FAMILY (correction off), FAMILY+c.
FitOptions method_fit_options(const std::string& method);

// Throws std::invalid_argument naming the first method the protocol does not know; the ceiling diagnostics
// are known only where `size_protocol`.
void check_methods(const std::vector<std::string>& methods, bool size_protocol);

}  // namespace arfit::fit::detail
