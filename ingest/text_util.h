// Small strict parsing helpers shared by the readers in ingest/. Internal to the component.
// Strict means: a number must be the whole token, must be finite, and a unit must be one we know.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/sample.h"
#include "model/text.h"  // trim, lower

namespace arfit::ingest::detail {

// Lines of a text, without their terminators ("\n" or "\r\n"). Line i is lines[i], reported as i + 1.
std::vector<std::string_view> split_lines(std::string_view text);

bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
bool contains(std::string_view s, std::string_view needle);
bool icontains(std::string_view s, std::string_view needle);  // case-insensitive
// Whitespace-separated tokens.
std::vector<std::string_view> tokens(std::string_view s);

// Whole-token numbers. Return nullopt when the token is not a number; throw nothing.
std::optional<double> parse_double(std::string_view s);             // accepts nan/inf (caller checks)
std::optional<std::int64_t> parse_int(std::string_view s);          // optional sign, digits only
// A count read as a number (e.g. nccl-tests' #wrong): 0 unless positive, saturated at INT64_MAX where the value
// does not fit (converting such a double is undefined behaviour).
std::int64_t saturated_count(double v);
// Digits with optional '_' or ',' group separators ("1_073_741_824", "1048_576"); non-negative.
std::optional<std::int64_t> parse_grouped_uint(std::string_view s);

// A byte size with an optional unit: "1024", "1_024", "32KiB", "8 GiB", "1M" (K/M/G/T as in nccl-tests'
// -b/-e: binary), "512B". Decimal-ambiguous units (KB, MB, GB, kB) are rejected with *why set.
std::optional<std::int64_t> parse_size(std::string_view s, std::string* why = nullptr);

// A bandwidth "1.44GBps", "12 GB/s", "3 GiB/s" -> GB/s (1e9 bytes per second). A bare number needs
// default_unit ("GB/s"). Unknown units: nullopt with *why set.
std::optional<double> parse_bandwidth_gbps(std::string_view s, std::string_view default_unit, std::string* why);

// Multiplier turning a time in `unit` ("us", "ms", "s", "ns") into microseconds; nullopt when unknown.
std::optional<double> time_unit_to_us(std::string_view unit);

// "path/to/file.txt" -> "file.txt"; stem: "file".
std::string basename_of(const std::string& path);
std::string stem_of(const std::string& path);

// The collective of an nccl-tests binary named by its path or file name: "./build/all_reduce_perf" ->
// AllReduce. Only the binaries arfit models; nullopt for any other name. Shared by the text and JSON readers.
std::optional<Collective> collective_of_perf_binary(std::string_view path);

// A key usable as a CSV column / Sample::extra key: lower case, runs of other characters -> '_'.
std::string sanitize_key(std::string_view s);

}  // namespace arfit::ingest::detail
