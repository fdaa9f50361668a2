#include "codegen/rules_nccl_tuner.h"

#include <stdexcept>

#include "codegen/consumer_version.h"

namespace arfit::codegen {

std::string nccl_example_plugin_version(const std::string& given) {
  const VersionRange fixed{"2.30.3", "2.30.7"};
  if (!given.empty()) {
    const ReleaseVersion v = parse_release_version(given, "--consumer-version");
    if (compare_versions(v, parse_release_version("2.27.5", "")) >= 0 &&
        compare_versions(v, parse_release_version("2.30.3", "")) < 0)
      throw std::invalid_argument(
          "--consumer-version " + given + ": the example tuner plugin of NCCL 2.27.5 to 2.30.2 indexes NCCL's cost table "
          "(a flat float array passed as float**) as collCostTable[algo][proto] and crashes on the first rule that "
          "matches; it was fixed in 2.30.3. Use arfit's own tuner plugin (NCCL_TUNER_PLUGIN=arfit, "
          "docs/nccl_tuner_plugin.md), which reads this file too, or NCCL 2.30.3 or later");
  }
  return check_consumer_version(
      given, "NCCL's example tuner plugin", fixed,
      "before 2.27.5 the example plugin reads no config file; use arfit's own tuner plugin (NCCL_TUNER_PLUGIN=arfit, "
      "docs/nccl_tuner_plugin.md)",
      "a later example plugin may read the file differently; arfit's own tuner plugin (docs/nccl_tuner_plugin.md) "
      "reads this file for any NCCL with tuner API v3 to v6");
}

std::vector<std::string> nccl_example_plugin_notes(const std::string& version, int channels) {
  std::vector<std::string> notes;
  notes.push_back("For NCCL's example tuner plugin of NCCL 2.30.3 to " + version +
                  " (earlier ones crash on the first matching rule). Beware its side effects: it sets 1 channel before "
                  "matching, so every call no rule here matches -- broadcast, reduce, all-gather, reduce-scatter, an "
                  "all-reduce of another communicator size -- runs on ONE channel, and where a rule's algorithm is "
                  "unavailable NCCL picks its own, still on one channel.");
  if (channels == 0)
    notes.push_back("channels=0 in every rule keeps NCCL's own channel count for the matching calls (NCCL reads a 0 cap as "
                    "none; the plugin's -1 would leave the 1 channel).");
  notes.push_back("arfit's own plugin reads this file without those effects: NCCL_TUNER_PLUGIN=arfit "
                  "ARFIT_TUNER_FILE=<this file> (docs/nccl_tuner_plugin.md).");
  return notes;
}

}  // namespace arfit::codegen
