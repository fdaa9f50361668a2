#include "bench/host/host_ops.h"

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

}  // namespace arfit::bench::host
