// The readers behind ingest_text(), one per format (one file each), and the pieces they share.
// Internal to ingest/: other components use ingest/ingest.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ingest/ingest.h"
#include "model/sample.h"

namespace arfit::ingest::detail {

// `name` is the path or label used in messages; Sample::source is its basename.
IngestResult read_nccl_tests_text(const std::string& text, const std::string& name, const Options& options);
IngestResult read_nccl_tests_json(const std::string& text, const std::string& name, const Options& options);
IngestResult read_param_comms(const std::string& text, const std::string& name, const Options& options);
IngestResult read_trtllm_csv(const std::string& text, const std::string& name, const Options& options);
IngestResult read_aiconfigurator(const std::string& text, const std::string& name, const Options& options);
IngestResult read_arfit_csv(const std::string& text, const std::string& name, const Options& options);

// Warnings are capped per file so a file of 1,000 repeated sizes does not flood the terminal; the count
// in IngestResult::duplicates stays exact.
inline constexpr std::size_t kMaxListedWarnings = 20;
void add_warning(IngestResult& r, const std::string& message);
// Appends a final "... and N more" line when warnings were dropped.
void finish_warnings(IngestResult& r, const std::string& name);

// The rank counts n >= 1 for which busbw/algbw == bus_factor(c, n), given the printed values and their
// rounding (half a unit of the last printed digit). Intervals from several rows are intersected.
// Only all-reduce, all-gather, reduce-scatter and all-to-all(v) have a factor that depends on n.
class RankInference {
 public:
  explicit RankInference(Collective c) : collective_(c) {}
  // algbw/busbw as printed (text, so that the number of decimals is known).
  void add(const std::string& algbw_text, const std::string& busbw_text);
  void add(double algbw, double busbw, double algbw_half_ulp, double busbw_half_ulp);
  // The single integer consistent with every row, or nullopt (no usable rows, a constant bus factor,
  // rows that disagree, or more than one candidate).
  std::optional<int> rank_count() const;
  bool informative() const;  // the collective's bus factor depends on n
  bool inconsistent() const { return used_ > 0 && lo_ > hi_; }

 private:
  Collective collective_;
  double lo_ = 1.0, hi_ = 1e300;  // bounds on n
  int used_ = 0;
};

// The columns of a CSV header row (line `header_line` of `name`), each name trimmed (and lower-cased when
// `lower_case`) to its position. An empty or repeated name is an InputError naming the line.
std::map<std::string, std::size_t> csv_header_columns(const std::vector<std::string>& header, bool lower_case,
                                                      const std::string& name, long header_line);
// The fields of a CSV data row, line `line_no` of `name` (the CSV readers: TensorRT-LLM, aiconfigurator): as many
// as the header's, read at line `header_line`. An unterminated quoted field or another count of fields is an
// InputError naming the line.
std::vector<std::string> csv_row_fields(const std::string& line, std::size_t header_fields, long header_line,
                                        const std::string& name, long line_no);

// Half a unit in the last place of a printed decimal number ("0.01" -> 0.005, "12" -> 0.5).
double half_ulp(const std::string& printed);

}  // namespace arfit::ingest::detail
