// NCCL's example tuner plugin's rules around the CSV config it reads -- what it does to the calls no rule matches
// and which NCCL releases ship an example that reads the file without crashing. Read in NVIDIA/nccl at
// v2.27.5-1, v2.28.9-1, v2.29.7-1, v2.30.3-1 and v2.30.7-1 (ext-tuner/example/plugin.c, plugins/tuner/example/
// plugin.c since 2.29.7; src/enqueue.cc for how NCCL calls it):
//   * the CSV config (NCCL_TUNER_CONFIG_FILE) first appears in 2.27.5;
//   * 2.27.5 to 2.30.2 index the cost table as collCostTable[algo][proto] on NCCL's float**, which is a cast of a
//     flat float[algorithms][protocols] array: the first matching rule dereferences cost bits as a pointer and
//     crashes the process; 2.30.3 casts it to float (*)[NCCL_NUM_PROTOCOLS] (fixed);
//   * every call starts with *nChannels = 1: a call no rule matches (another collective, another communicator
//     size, a size no rule covers) and a rule with channels -1 run on one channel, and a rule whose algorithm NCCL
//     marked unavailable leaves NCCL's own choice, still on one channel.
// arfit's own plugin (docs/nccl_tuner_plugin.md) sets costs only where arfit has a model and never caps channels.
#pragma once

#include <string>
#include <vector>

namespace arfit::codegen {

// --consumer-version for the nccl-tuner format: an NCCL release ("2.30.7", "2.30.7-1"); "" = the newest read.
// Throws std::invalid_argument naming --consumer-version for a release whose example plugin has no CSV config
// (before 2.27.5), crashes on a matching rule (2.27.5 to 2.30.2) or was not read (after 2.30.7).
std::string nccl_example_plugin_version(const std::string& given);

// The banner lines that state the example plugin's side effects for a config written for `version`.
std::vector<std::string> nccl_example_plugin_notes(const std::string& version, int channels);

}  // namespace arfit::codegen
