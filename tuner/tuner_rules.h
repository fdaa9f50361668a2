// The rules file of NCCL's example tuner plugin, as `arfit codegen --format nccl-tuner` writes it
// (NCCL_TUNER_CONFIG_FILE: `collective,min_bytes,max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps
// [,regBuff]]`, `#` comments), read strictly: where the example plugin turns an unknown collective into allreduce
// and an unknown algorithm into ring, this reader refuses the file, naming the line and the field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace arfit::tuner {

// NCCL's indices (tuner/abi/nccl_common.h) of the names the file uses.
int nccl_function_index(const std::string& collective);   // broadcast 0 .. allreduce 4; -1 unknown
int nccl_algorithm_index(const std::string& algorithm);   // tree 0 .. pat 6; -1 unknown
int nccl_protocol_index(const std::string& protocol);     // ll 0, ll128 1, simple 2; -1 unknown

struct TunerRule {
  int function = 4;
  std::uint64_t min_bytes = 0, max_bytes = 0;  // inclusive
  int algorithm = 0, protocol = 0;
  int channels = -1;                           // > 0: the channel count to hand NCCL; else NCCL's own
  int nnodes = -1, nranks = -1, pipe_ops = -1, reg_buff = -1;  // -1: any
  long line = 0;
  bool matches(int function, std::size_t bytes, std::size_t nranks, std::size_t nnodes, int pipe_ops, int reg_buff) const;
};

// Throws InputError naming `path`, the line and the field.
std::vector<TunerRule> read_tuner_rules(const std::string& text, const std::string& path);

}  // namespace arfit::tuner
