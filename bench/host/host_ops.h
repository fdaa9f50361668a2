// The host backend's descriptors (one source file each) and helpers they share.
#pragma once

#include <optional>

#include "bench/host/host_common.h"

namespace arfit::bench::host {

const Descriptor& allreduce_mpi_descriptor();
const Descriptor& allreduce_oneshot_descriptor();
const Descriptor& allreduce_twoshot_descriptor();
const Descriptor& allreduce_multimem_oneshot_descriptor();
const Descriptor& allreduce_multimem_twoshot_descriptor();
const Descriptor& allreduce_low_precision_descriptor();
const Descriptor& allgather_mpi_descriptor();
const Descriptor& reducescatter_mpi_descriptor();
const Descriptor& alltoall_mpi_descriptor();
const Descriptor& alltoallv_mpi_descriptor();

// Fault injection for MPI collectives (test only): a rank that never joins; only the hard timeout ends it.
[[noreturn]] void hang_forever();

// MPI counts are int: messages whose element count does not fit are rejected before the run.
std::optional<CaseIssue> validate_mpi_count(const Case& c, const Limits&);

// Ops whose message lives in the shared workspace.
std::optional<CaseIssue> validate_workspace(const Case& c, const Limits& limits);


}  // namespace arfit::bench::host
