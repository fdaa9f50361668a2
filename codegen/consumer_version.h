// Which versions of a consumer (TensorRT-LLM, vLLM, SGLang, FlashInfer, NCCL) a generated file is written for.
// A consumer's rules -- what it checks around its lookup, what it decides itself, where its table lives -- were
// read from its code at named versions (codegen/rules_<consumer>.h); `--consumer-version` names the version the
// user runs, and a version whose schema arfit has not read is refused (a usage error naming the option), never
// guessed.
#pragma once

#include <string>
#include <vector>

namespace arfit::codegen {

// A release number as the engines print them ("0.33.0", "0.6.18", "2.30.7-1", "0.11.0rc2", "v0.5.0"): the
// numeric release parts, compared part by part (missing parts are 0). Pre-release and local suffixes are kept
// for messages but do not order: "0.11.0rc2" is inside a range that includes 0.11.0.
struct ReleaseVersion {
  std::vector<long> parts;
  std::string text;  // as given
};
// Throws std::invalid_argument naming `option` when `text` does not start with a number.
ReleaseVersion parse_release_version(const std::string& text, const std::string& option);
// -1, 0, 1.
int compare_versions(const ReleaseVersion& a, const ReleaseVersion& b);

// The versions of one consumer whose rules arfit knows, inclusive: [first, last], both as read (the files the
// rules came from name them).
struct VersionRange {
  std::string first;
  std::string last;
  bool contains(const ReleaseVersion& v) const;
  std::string text() const;  // "0.10.2 to 0.33.0"
};

// `given` ("" = the newest arfit knows, range.last) checked against the known range of `consumer`: throws
// std::invalid_argument naming --consumer-version, the version, what arfit knows and `why_not` for versions
// below the range (what is different there) or `newer` for versions above it. Returns the version to write
// for (the newest when none was given).
std::string check_consumer_version(const std::string& given, const std::string& consumer, const VersionRange& range,
                                   const std::string& why_older, const std::string& why_newer);

// Named snapshots instead of releases (SGLang's configs file, TensorRT-LLM commits): `given` must be one of
// `known` (case-insensitive; a commit may be given by any prefix of 7 or more hex digits of a known one) or ""
// (all of them). Returns the names written for; throws std::invalid_argument naming --consumer-version.
std::vector<std::string> check_consumer_snapshot(const std::string& given, const std::string& consumer,
                                                 const std::vector<std::string>& known, const std::string& why_unknown);

}  // namespace arfit::codegen
