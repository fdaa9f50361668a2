// The DLRM performance model's all-to-allv figure: measured all-to-allv latency against the effective
// all-to-all size, one panel per mode (sum, max_of_max, max_of_sum; model/alltoallv.h), over the uniform
// all-to-all prediction and its 90 % band. In the right mode the dots sit on the line.
#pragma once

#include <string>
#include <vector>

#include "model/alltoallv.h"
#include "model/model_set.h"
#include "model/sample.h"
#include "plots/figures.h"

namespace arfit::plots {

struct AllToAllvPoint {
  double bytes = 0;     // effective size in the panel's mode
  double time_us = 0;   // measured (median of repeats)
  std::string family;   // colour key: which side of the exchange is uneven ("uneven senders", ...)
};

struct AllToAllvPanel {
  std::string mode;  // "sum", "max_of_max", "max_of_sum"
  std::vector<AllToAllvPoint> points;
  double gmae = -1;  // of the all-to-all prediction at these points, fraction; < 0 = unknown
};

struct AllToAllvFigureData {
  std::string title;     // the all-to-allv group
  std::string subtitle;  // e.g. "predicted from the all-to-all model (sigmoid); chosen mode max_of_max"
  std::vector<FitCurvePoint> curve;  // the uniform all-to-all prediction with its band
  std::vector<AllToAllvPanel> panels;
};

Figure alltoallv_figure(const AllToAllvFigureData& data, const std::string& stem);

// Which side of a split is uneven: "even", "uneven senders" (DLRM tables), "uneven receivers" (Zipf routing,
// hot spots) or "both uneven".
std::string alltoallv_family(const std::string& splits, double element_bytes);
std::string alltoallv_family(const AllToAllvSplit& split);

struct NamedAllToAllv {
  std::string name;  // "alltoallv_<system>_<strategy>_..._n2"
  AllToAllvFigureData data;
};

// One figure per all-to-allv group of `samples` (samples with a `splits` column) whose system, strategy, rank and
// node count have an all-to-all model in `models`; repeats of one split are reduced to their upper median.
std::vector<NamedAllToAllv> alltoallv_figures(const std::vector<Sample>& samples, const ModelSet& models);

}  // namespace arfit::plots
