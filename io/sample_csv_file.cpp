#include "io/sample_csv_file.h"

#include "io/atomic_output.h"
#include "io/input_file.h"

namespace arfit {

SampleFile read_samples_csv(const std::string& path) { return parse_samples_csv(read_file(path), path); }

void write_samples_csv(const std::string& path, const SampleFile& file) {
  write_string_atomically(path, format_samples_csv(file));
}

}  // namespace arfit
