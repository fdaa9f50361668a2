// Markdown pipe tables of measurements, as blog posts and issues give nccl-tests results (docs/ingest.md,
// "Markdown bandwidth tables"):
//
//   ## 8x H200 node, 16GiB payload, 8 GPUs        a heading: the payload and GPU count of the tables under it
//   | collective | busbw (GB/s) | algbw (GB/s) |
//   |---|---|---|
//   | all-reduce | 480.1 | 274.3 |
//
// This unit knows the table syntax and what each column and cell means; the nccl-tests text reader
// (nccl_tests_text.cpp) keeps the table state and turns the rows into samples together with the rest of the
// log (rank count, collective, timings). Internal to ingest/.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "model/sample.h"

namespace arfit::ingest::detail {

// The cells of a "| a | b |" line, each trimmed; the outer pipes are optional.
std::vector<std::string> pipe_cells(std::string_view line);

// True for the "|---|:--:|" line that must follow a header.
bool is_pipe_separator(const std::vector<std::string>& cells);

// What a markdown heading says about the tables under it ("## 8x H200 node, 16GiB payload, 8 GPUs").
struct PipeHeading {
  std::string text;                  // kept as extra["section"]: two machines' tables in one file stay apart
  std::optional<std::int64_t> size;  // "<size> payload"
  std::optional<int> ranks;          // "<n> GPUs" / "<n> ranks"
};
PipeHeading parse_pipe_heading(std::string_view heading);

enum class PipeColumnKind { Size, Gpus, Collective, Time, AlgBw, BusBw, UnnamedBw, Other };

struct PipeColumn {
  PipeColumnKind kind = PipeColumnKind::Other;
  std::string header;   // as written
  std::string key;      // Other columns: the Sample::extra key (sanitize_key)
  std::string unit;     // Time, AlgBw, BusBw: the unit in parentheses ("us", "GB/s"); "" when none
  std::string variant;  // a further bandwidth column: what tells its samples apart ("NVLS off")
  std::optional<int> ranks, nodes;  // UnnamedBw: from a note 'column "1 node" = 8 GPUs'
};

// The columns a header row names. `column_ranks`: the GPU count notes give unnamed bandwidth columns, by
// lower-cased header. Throws InputError (file:line, the column) for a time column without a known unit.
std::vector<PipeColumn> pipe_columns(const std::vector<std::string>& header,
                                     const std::map<std::string, int>& column_ranks, const std::string& file,
                                     long line);

// One data row, cell by cell. Bandwidths keep their printed digits (in GB/s), which the busbw/algbw rank
// inference reads; "N/A" where the row says so.
struct PipeRow {
  std::optional<std::int64_t> size;      // the size column, else the heading's payload
  std::optional<int> ranks;              // the GPUs column, else the heading's count
  std::optional<Collective> collective;  // the collective column
  std::string variant;                   // what the collective cell adds ("NCCL_NVLS_ENABLE=1")
  std::optional<double> time_us;
  std::string algbw_text, busbw_text;    // the primary algbw / busbw columns
  std::map<std::string, std::string> other;  // extra key -> cell
  std::vector<std::pair<const PipeColumn*, std::string>> further_bw, unnamed_bw;
};

// Reads the cells of a row with as many cells as `columns` (the caller checks the count). Throws InputError
// (file:line, the column) for a cell that is not what its column holds.
PipeRow parse_pipe_row(const std::vector<PipeColumn>& columns, const std::vector<std::string>& cells,
                       const PipeHeading& heading, const std::string& file, long line);

}  // namespace arfit::ingest::detail
