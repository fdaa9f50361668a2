#include "codegen/rules_flashinfer.h"

#include "codegen/consumer_version.h"

namespace arfit::codegen {

namespace {
const VersionRange kRange{"0.5.0", "0.6.18"};
}

std::string flashinfer_version(const std::string& given) {
  return check_consumer_version(given, "FlashInfer", kRange,
                                "before 0.5.0 FlashInfer has no _use_oneshot_heuristics (0.2.9 to 0.4.x take one-shot while "
                                "token_num <= 128, earlier ones need use_oneshot given): nothing reads this file",
                                "a later trtllm_ar.py may key or compare the dict differently");
}

std::vector<std::string> flashinfer_version_range() { return {kRange.first, kRange.last}; }

const std::vector<int>& flashinfer_world_sizes() {
  static const std::vector<int> sizes{2, 4, 8, 16};
  return sizes;
}

const std::map<int, double>& flashinfer_default_heuristics() {
  static const std::map<int, double> d{{2, 512}, {4, 64}, {8, 42}};
  return d;
}

double flashinfer_comm_mib(double bytes, int world_size) { return bytes * 2.0 * world_size / (1024.0 * 1024.0); }

double flashinfer_floor_mib(int world_size) {
  // token_num = world_size at hidden 65536 in a 2-byte type: ws * 65536 * 2 * ws * 2 / MiB = ws^2 / 4 (fp32 at
  // hidden 32768 gives the same).
  return static_cast<double>(world_size) * world_size / 4.0;
}

double flashinfer_cap_mib() { return 2.0 * 2145386496.0 / (1024.0 * 1024.0); }

std::vector<std::string> flashinfer_engine_notes(const std::string& version) {
  return {"For FlashInfer 0.5.0 to " + version + " (flashinfer/comm/trtllm_ar.py). It reads the dict only when the caller "
          "leaves use_oneshot=None (SGLang does) and the workspace is the trtllm backend's: backend \"auto\" takes MNNVL "
          "where multicast works, which never reads it.",
          "Every value is at least world_size^2 / 4, so that a message of token_num <= world_size (a decode step) is "
          "never sent to two-shot, which asserts token_num > world_size; every world size the kernel runs (2, 4, 8, 16) "
          "has a value (a missing one raises KeyError); values above 4092 act as 4092 (MAX_COMM_SIZE)."};
}

}  // namespace arfit::codegen
