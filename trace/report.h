// Writing a breakdown to a folder: the CSV tables and the figures, all or nothing. Everything is produced in a
// staging folder inside DIR first and renamed into place only when every file succeeded, so a failure (bad
// gnuplot, full disk) leaves DIR as it was.
#pragma once

#include <string>
#include <vector>

#include "plots/gnuplot_runner.h"
#include "trace/breakdown.h"

namespace arfit::trace {

struct ReportOptions {
  std::size_t decode_steps = 8;  // decode steps drawn (decimated; the last is always kept)
  bool figures = true;
  std::vector<plots::ImageFormat> formats{plots::ImageFormat::Png};
};

// Files written (relative names): breakdown_classes.csv, breakdown_entries.csv, comm_share.csv,
// unmatched_kernels.csv and, with figures, breakdown_classes_prefill / breakdown_entries_prefill (prefill and
// other non-decode phases; "_all" instead of "_prefill" when there is no prefill phase, e.g. an nsys summary), breakdown_classes_decode / breakdown_entries_decode (decimated decode steps), each
// .gp + image, and comm_share.{gp,png}. A part without phases gets no figure. Returns the paths written.
std::vector<std::string> write_breakdown_report(const Breakdown& b, const std::string& dir, const ReportOptions& opt);

}  // namespace arfit::trace
