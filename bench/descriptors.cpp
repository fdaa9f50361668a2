// The registry of descriptors compiled into this build, and the backend factory.
#include <algorithm>

#include "bench/backend.h"
#include "bench/host/host_ops.h"
#if ARFIT_BENCH_HAVE_CUSTOM
#include "bench/gpu/gpu_backend.h"
#endif

namespace arfit::bench {

std::string option_for(kernels::KernelParam parameter, const Case& c) {
  using kernels::KernelParam;
  switch (parameter) {
    case KernelParam::Ranks: return "--tp";
    case KernelParam::LocalRanks: return "--virtual-ranks";
    case KernelParam::DType: return "--dtype";
    case KernelParam::Fusion: return "--fusion";
    // A dlrm split sets its own size (batch x tables x dimension): a count it cannot serve is its field, not --bytes.
    case KernelParam::Count:
      return c.split.rfind("dlrm:", 0) == 0 ? "--splits" : c.tokens ? "--tokens/--hidden" : "--bytes";
    case KernelParam::Hidden: return "--hidden";
    case KernelParam::Workspace: return "--workspace";
    case KernelParam::Device: return "--device";
    default: return "--strategy";
  }
}

const std::vector<const Descriptor*>& all_descriptors() {
  static const std::vector<const Descriptor*> v = [] {
    std::vector<const Descriptor*> d = {
        &host::allreduce_mpi_descriptor(),     &host::allreduce_oneshot_descriptor(), &host::allreduce_twoshot_descriptor(),
        &host::allreduce_multimem_oneshot_descriptor(), &host::allreduce_multimem_twoshot_descriptor(),
        &host::allgather_mpi_descriptor(),     &host::reducescatter_mpi_descriptor(), &host::alltoall_mpi_descriptor(),
        &host::alltoallv_mpi_descriptor(),     &host::allreduce_low_precision_descriptor(),
    };
#if ARFIT_BENCH_HAVE_CUSTOM
    // kernels/ strategies: custom ONESHOT/TWOSHOT, and the NCCL ones when NCCL was found.
    for (const Descriptor* x : gpu::gpu_descriptors()) d.push_back(x);
#endif
    return d;
  }();
  return v;
}

const Descriptor* find_descriptor(const std::string& backend, Collective c, const std::string& strategy) {
  for (const Descriptor* d : all_descriptors())
    if (d->backend == backend && d->collective == c && d->strategy == strategy) return d;
  return nullptr;
}

std::vector<std::string> strategies_of(const std::string& backend, Collective c) {
  std::vector<std::string> out;
  for (const Descriptor* d : all_descriptors())
    if (d->backend == backend && d->collective == c) out.push_back(d->strategy);
  return out;
}

std::vector<std::string> default_strategies_of(const std::string& backend, Collective c) {
  std::vector<std::string> out;
  for (const Descriptor* d : all_descriptors())
    if (d->backend == backend && d->collective == c && d->exact) out.push_back(d->strategy);
  return out;
}

std::vector<std::string> available_backends() {
  std::vector<std::string> b = {"host"};
#if ARFIT_BENCH_HAVE_NCCL
  b.push_back("nccl");
#endif
#if ARFIT_BENCH_HAVE_CUSTOM
  b.push_back("custom");
#endif
  return b;
}

std::string backend_unavailable_reason(const std::string& backend) {
  auto avail = available_backends();
  if (std::find(avail.begin(), avail.end(), backend) != avail.end()) return "";
  if (backend == "nccl") return "this arbench was built without NCCL (CUDA or NCCL not found at configure time)";
  if (backend == "custom") return "this arbench was built without the CUDA kernels (nvcc or kernels/ strategies not found at configure time)";
  return "unknown backend '" + backend + "' (known: host, nccl, custom)";
}

std::unique_ptr<CapturedIterations> Backend::capture(const std::function<void()>&) {
  throw GridError("--cuda-graph", "the " + name() + " backend has no CUDA graphs (only nccl and custom do)");
}

std::unique_ptr<Backend> make_backend(const std::string& name, const BackendOptions& options) {
  if (std::string why = backend_unavailable_reason(name); !why.empty()) throw GridError("--backend", why);
  if (name == "host") return std::make_unique<host::HostBackend>(options);
#if ARFIT_BENCH_HAVE_CUSTOM
  if (name == "nccl" || name == "custom") return gpu::make_gpu_backend(name, options);
#endif
  throw GridError("--backend", "unknown backend '" + name + "'");
}

}  // namespace arfit::bench
