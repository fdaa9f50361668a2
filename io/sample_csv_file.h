// arfit's sample CSV as a file (the format, its parser and writer: model/sample_csv.h).
#pragma once

#include <string>

#include "model/sample_csv.h"

namespace arfit {

// The file read (read_file: recorded as an input of this run) and parsed; errors name `path`.
SampleFile read_samples_csv(const std::string& path);
// The whole file, written atomically (temporary file + rename; io/atomic_output.h).
void write_samples_csv(const std::string& path, const SampleFile& file);

}  // namespace arfit
