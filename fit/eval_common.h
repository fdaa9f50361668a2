// Internal to fit/'s evaluation protocols (eval.cpp, eval_crossn.cpp, eval_crosshw.cpp): the pieces every
// protocol shares — log-log interpolation, the parallel loop, per-curve predictions and their summary,
// method names. Not part of the public API (fit/eval.h is).
#pragma once

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "fit/eval.h"

namespace arfit::fit::detail {

// Piecewise-linear ln t against ln s through the measured points, extended linearly by the end segments
// (the table-driven approach).
double loglog_at(const std::vector<double>& s, const std::vector<double>& t, double x);

template <typename Fn>
void parallel_for(size_t n, int threads, Fn fn) {
  threads = std::max(1, std::min<int>(threads, static_cast<int>(n)));
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> pool;
  for (int w = 0; w < threads; ++w)
    pool.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) fn(i);
    });
  for (auto& th : pool) th.join();
}

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

// Throws std::invalid_argument naming the first method the protocol does not know. `extra`: names the
// protocol adds to the family methods (e.g. "scale"); the ceiling diagnostics only where `size_protocol`.
void check_methods(const std::vector<std::string>& methods, bool size_protocol, const std::vector<std::string>& extra = {});

}  // namespace arfit::fit::detail
