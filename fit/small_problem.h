#pragma once
// One small least-squares problem (a handful of parameters) solved quietly with dense QR: the fits of fit/ that
// need no more than Ceres' defaults besides (topology_fit.cpp, eval_crossn.cpp's step alpha-beta).
#include <ceres/ceres.h>

namespace arfit::fit {

inline ceres::Solver::Summary solve_small_problem(ceres::Problem& problem, int max_iterations = 200) {
  ceres::Solver::Options options;
  options.linear_solver_type = ceres::DENSE_QR;
  options.logging_type = ceres::SILENT;
  options.max_num_iterations = max_iterations;
  ceres::Solver::Summary summary;
  ceres::Solve(options, &problem, &summary);
  return summary;
}

}  // namespace arfit::fit
