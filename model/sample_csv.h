// arfit's own sample CSV.
//
//   #arfit-samples v1                       <- schema line, always first
//   # key: value                            <- zero or more run-header comments (hostname, plan, ...)
//   collective,strategy,fusion,...          <- column header
//   allreduce,NCCL,NONE,...                 <- one row per sample
//
// Required columns: collective, strategy, nranks, bytes, time_us. All others may be absent and take the
// Sample defaults. Unknown columns are kept in Sample::extra and written back. Fields containing commas or
// quotes are quoted as in RFC 4180. Errors are InputError naming file, line and column.
#pragma once

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "model/sample.h"

namespace arfit {

inline constexpr const char* kSampleSchemaLine = "#arfit-samples v1";
inline constexpr int kSampleSchemaVersion = 1;

struct SampleFile {
  std::vector<std::pair<std::string, std::string>> meta;  // run header, in file order
  std::vector<std::string> extra_columns;                 // unknown columns, in file order
  std::vector<Sample> samples;
};

// The standard columns, in the order the writer emits them.
const std::vector<std::string>& sample_columns();

// Parses text read from `name` (used only in error messages).
SampleFile parse_samples_csv(const std::string& text, const std::string& name);
// True when the text starts with the schema line (format detection).
bool looks_like_samples_csv(const std::string& text);

// Pieces for writers that append row by row (arbench --resume).
std::string samples_csv_preamble(const std::vector<std::pair<std::string, std::string>>& meta,
                                 const std::vector<std::string>& extra_columns = {});
std::string samples_csv_row(const Sample& s, const std::vector<std::string>& extra_columns = {});

// The whole file's text. Extra columns are the union of Sample::extra keys. Reading and writing the file:
// io/sample_csv_file.h.
std::string format_samples_csv(const SampleFile& file);

// CSV helpers shared by the readers in ingest/.
std::vector<std::string> split_csv_line(const std::string& line, bool* unterminated_quote = nullptr);
std::string csv_escape(const std::string& field);

}  // namespace arfit
