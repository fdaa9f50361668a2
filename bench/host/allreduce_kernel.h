// The host ONESHOT, TWOSHOT, MULTIMEM_ONESHOT and MULTIMEM_TWOSHOT all-reduces: the GPU kernels' own code (kernels/device/all_reduce_kernels.h,
// compiled for the CPU) run by each rank's process, one thread per rank, over the group's MPI shared-memory
// window (ShmWorkspace). Same partition (kernels/device/partition.h), barriers and fused epilogue as on a GPU;
// only the threads per block differ (1 here: no fibers, the kernel runs inline on the rank's thread).
#pragma once

#include <sched.h>

#include "bench/host/host_ops.h"

namespace arfit::bench::host {

template <typename T, kernels::AllReduceAlgorithm kAlgorithm>
class KernelAllReduce : public HostAllReduceBase<T> {
 protected:
  void setup() override {
    ShmWorkspace* ws = static_cast<HostBackend*>(this->ctx_.backend)->workspace();
    if (!ws) throw std::runtime_error("host " + kernels::to_string(kAlgorithm) + ": no shared workspace for this group");
    team_ = ws->view();
    const Case& c = this->case_;
    params_.dtype = dtype_of<T>();
    params_.fusion = c.fusion;
    params_.count = c.count;
    params_.hidden = c.hidden;
    params_.rms_eps = kRmsEps;
    params_.fp8_scale = kHostFp8Scale;
    params_.buffers.resize(1);
  }

 public:
  RunStatus run(int b) override {
    if (this->withhold()) {  // fault injection: never launch, so the peers' barriers wait for the abort
      while (!(this->ctx_.abort && this->ctx_.abort->load(std::memory_order_relaxed))) sched_yield();
      return RunStatus::Aborted;
    }
    kernels::AllReduceBuffers& buffers = params_.buffers[0];
    buffers.input = this->input(b);
    buffers.output = this->output();
    if (this->case_.fusion != FusionOp::None) {
      const kernels::AllReduceBuffers epilogue = this->epilogue_buffers();
      buffers.residual_in = epilogue.residual_in;
      buffers.residual_out = epilogue.residual_out;
      buffers.gamma = epilogue.gamma;
      buffers.fp8_out = epilogue.fp8_out;
      buffers.scale_out = epilogue.scale_out;
    }
    kernels::device::host::LaunchOptions options;
    options.external_abort = this->ctx_.abort;  // the watchdog ends a barrier wait whose peer never comes
    return kernels::all_reduce_on_host(kAlgorithm, team_, params_, 1, options) ? RunStatus::Ok : RunStatus::Aborted;
  }

 private:
  kernels::HostTeamView team_;
  kernels::AllReduceParams params_;
};

// The descriptor of a host kernel all-reduce (ONESHOT, TWOSHOT, MULTIMEM_ONESHOT or MULTIMEM_TWOSHOT).
Descriptor kernel_allreduce_descriptor(kernels::AllReduceAlgorithm algorithm);

}  // namespace arfit::bench::host
