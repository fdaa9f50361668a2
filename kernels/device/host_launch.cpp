// CPU launches of the custom all-reduce kernels: the same validation, launch parameters and partition as the
// GPU launch (all_reduce_launch.cpp), then the host executor instead of <<<>>>.
#include "kernels/all_reduce.h"
#include "kernels/device/partition.h"

namespace arfit::kernels {
namespace device {

// Defined by host_kernels_t<N>.cpp.
template <int kThreads>
void launch_all_reduce_on_host(AllReduceAlgorithm, DType, FusionOp, const TeamPointers&, const AllReduceLaunch&,
                               const host::LaunchOptions&);
template <int kThreads>
void launch_residual_rms_norm_on_host(DType, FusionOp, const void*, const AllReduceBuffers&, std::int64_t, std::int64_t,
                                      float, float);
extern template void launch_all_reduce_on_host<1>(AllReduceAlgorithm, DType, FusionOp, const TeamPointers&,
                                                  const AllReduceLaunch&, const host::LaunchOptions&);
extern template void launch_all_reduce_on_host<32>(AllReduceAlgorithm, DType, FusionOp, const TeamPointers&,
                                                   const AllReduceLaunch&, const host::LaunchOptions&);
extern template void launch_all_reduce_on_host<64>(AllReduceAlgorithm, DType, FusionOp, const TeamPointers&,
                                                   const AllReduceLaunch&, const host::LaunchOptions&);
extern template void launch_residual_rms_norm_on_host<1>(DType, FusionOp, const void*, const AllReduceBuffers&, std::int64_t,
                                                         std::int64_t, float, float);
extern template void launch_residual_rms_norm_on_host<32>(DType, FusionOp, const void*, const AllReduceBuffers&,
                                                          std::int64_t, std::int64_t, float, float);
extern template void launch_residual_rms_norm_on_host<64>(DType, FusionOp, const void*, const AllReduceBuffers&,
                                                          std::int64_t, std::int64_t, float, float);

}  // namespace device

namespace {

void require_host_threads(int threads) {
  if (!host_supports_threads_per_block(threads)) {
    throw KernelError("host kernels: " + std::to_string(threads) +
                      " threads per block is not compiled in (kHostThreadsPerBlock: 1, 32, 64)");
  }
}

bool abort_raised(const TeamPointers& team, const device::host::LaunchOptions& options) {
  return (team.abort_flag && __atomic_load_n(team.abort_flag, __ATOMIC_RELAXED) != 0) ||
         (options.external_abort && options.external_abort->load());
}

}  // namespace

bool all_reduce_on_host(AllReduceAlgorithm algorithm, const HostTeamView& team, const AllReduceParams& p,
                        int threads_per_block, const device::host::LaunchOptions& options) {
  require_host_threads(threads_per_block);
  validate_all_reduce(algorithm, team.shape(), p);
  const AllReduceLaunch args = make_all_reduce_launch(p);
  TeamPointers table = team.table();
  // The kernels poll their abort word only when the team has one, and the host's load of that word is also
  // where the runner's external abort is seen (primitives.h): a team without a word polls this one, never
  // raised, so an external abort still ends the launch. The launch is synchronous: the word outlives it.
  std::uint32_t never_raised = 0;
  if (!table.abort_flag && options.external_abort) table.abort_flag = &never_raised;
  table.blocks_per_rank = all_reduce_blocks_per_rank(algorithm, p, threads_per_block, team.max_blocks_per_rank());
  switch (threads_per_block) {
    case 1: device::launch_all_reduce_on_host<1>(algorithm, p.dtype, p.fusion, table, args, options); break;
    case 32: device::launch_all_reduce_on_host<32>(algorithm, p.dtype, p.fusion, table, args, options); break;
    default: device::launch_all_reduce_on_host<64>(algorithm, p.dtype, p.fusion, table, args, options); break;
  }
  return !abort_raised(table, options);
}

void residual_rms_norm_on_host(DType dtype, FusionOp fusion, std::int64_t count, std::int64_t hidden, float rms_eps,
                               float fp8_scale, const void* reduced, const AllReduceBuffers& b, int threads_per_block) {
  require_host_threads(threads_per_block);
  validate_residual_rms_norm(dtype, fusion, count, hidden, rms_eps, fp8_scale, reduced, b);
  const std::int64_t rows = count / hidden;
  switch (threads_per_block) {
    case 1: device::launch_residual_rms_norm_on_host<1>(dtype, fusion, reduced, b, rows, hidden, rms_eps, 1.0f / fp8_scale); break;
    case 32: device::launch_residual_rms_norm_on_host<32>(dtype, fusion, reduced, b, rows, hidden, rms_eps, 1.0f / fp8_scale); break;
    default: device::launch_residual_rms_norm_on_host<64>(dtype, fusion, reduced, b, rows, hidden, rms_eps, 1.0f / fp8_scale); break;
  }
}

}  // namespace arfit::kernels
