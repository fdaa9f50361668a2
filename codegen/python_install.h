// What the engine files (vllm, sglang, flashinfer) share: the version guard their install() runs first, so that a
// file written for one version of an engine refuses loudly to patch another (the engine raises at start-up,
// naming the version found and the versions the file was written for), and Python literals.
#pragma once

#include <string>
#include <vector>

namespace arfit::codegen {

// A Python string literal of `s` (double quotes; backslash, quotes and non-printable bytes escaped).
std::string python_string(const std::string& s);

// CONSUMER = "<consumer>", CONSUMER_VERSIONS = (first, last) and check_version(version): RuntimeError unless the
// version's release numbers lie in [first, last].
std::string python_release_guard(const std::string& consumer, const std::vector<std::string>& range);
// CONSUMER, CONSUMER_VERSIONS = (snapshot names) and check_version(snapshot): RuntimeError unless it is one of them.
std::string python_snapshot_guard(const std::string& consumer, const std::vector<std::string>& snapshots);

}  // namespace arfit::codegen
