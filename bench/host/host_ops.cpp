#include "bench/host/host_ops.h"

#include "bench/host/allreduce_kernel.h"

#include <algorithm>
#include <climits>
#include <thread>

namespace arfit::bench::host {

void hang_forever() {
  for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
}

std::optional<CaseIssue> validate_mpi_count(const Case& c, const Limits&) {
  if (c.count > INT_MAX)
    return CaseIssue{c.tokens ? "--tokens/--hidden" : "--bytes",
                     c.describe() + ": " + std::to_string(c.count) + " elements exceed MPI's int count limit"};
  return std::nullopt;
}

std::optional<CaseIssue> validate_workspace(const Case& c, const Limits& limits) {
  if (c.bytes > limits.workspace)
    return CaseIssue{"--workspace", c.describe() + ": the message of " + format_bytes(c.bytes) +
                                        " does not fit the shared workspace of " + format_bytes(limits.workspace) +
                                        " (raise --workspace or lower the sizes)"};
  return validate_mpi_count(c, limits);
}

Descriptor kernel_allreduce_descriptor(kernels::AllReduceAlgorithm algorithm) {
  Descriptor x;
  x.backend = "host";
  x.collective = Collective::AllReduce;
  x.strategy = kernels::to_string(algorithm);
  x.fusions = kernels::all_reduce_fusions(algorithm);  // every epilogue the algorithm's kernels instantiate
  x.dtypes = host_dtypes();
  x.rank_counts = kernels::custom_all_reduce_rank_counts();
  x.uses_workspace = true;
  x.byte_counts = [](std::int64_t count, int elem, int nranks) {
    return kernels::collective_byte_counts(Collective::AllReduce, count, elem, nranks);
  };
  // A rank's segment of the window: the kernels' workspace for messages up to this case's size.
  x.workspace_bytes = [](const Case& c) { return kernels::workspace_allocation_bytes(c.bytes); };
  x.validate = [algorithm](const Case& c, const Limits& limits) -> std::optional<CaseIssue> {
    if (auto issue = validate_workspace(c, limits)) return issue;
    try {
      kernels::validate_all_reduce_shape(algorithm, kernels::TeamShape{c.tp, 1, limits.workspace},
                                         kernels::parse_dtype(c.dtype), c.fusion, c.count, c.hidden);
    } catch (const kernels::KernelError& e) {
      return CaseIssue{option_for(e.parameter(), c), c.describe() + ": " + e.what()};
    }
    return std::nullopt;
  };
  return x;
}

}  // namespace arfit::bench::host
