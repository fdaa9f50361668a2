// NCCL_SYMMETRIC: ncclAllReduce on buffers from ncclMemAlloc registered as symmetric windows
// (ncclCommWindowRegister with NCCL_WIN_COLL_SYMMETRIC, NCCL >= 2.27), so that NCCL may pick its symmetric-memory
// kernels -- TensorRT-LLM's AllReduceStrategy.NCCL_SYMMETRIC (8). NONE only. Refused with a KernelError (arbench:
// --strategy, exit 2) when the NCCL compiled against or the one loaded at run time is older than 2.27.
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <cstring>
#include <utility>

#include "kernels/device/cuda_check.h"
#include "kernels/strategies/nccl_collective_strategy.h"
#include "kernels/strategies/nccl_collectives.h"
#include "kernels/strategies/strategy_support.h"

namespace arfit::kernels {

extern const StrategyDescriptor nccl_symmetric_all_reduce_strategy;

namespace {

constexpr const char* kWho = "NCCL_SYMMETRIC";
// ncclCommWindowRegister and NCCL_WIN_COLL_SYMMETRIC appeared in NCCL 2.27.0 (NCCL_VERSION(2, 27, 0) = 22700).
constexpr int kFirstSymmetricVersion = 22700;
#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= 22700
constexpr bool kBuiltWithWindows = true;
#else
constexpr bool kBuiltWithWindows = false;
#endif

std::string version_text(int code) {
  // NCCL >= 2.9 encodes major * 10000 + minor * 100 + patch.
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." + std::to_string(code % 100);
}

void require_windows_compiled() {
  if (!kBuiltWithWindows) {
    throw KernelError(std::string(kWho) + " needs NCCL >= " + version_text(kFirstSymmetricVersion) +
                      " (ncclCommWindowRegister); this build was compiled against an older nccl.h: use NCCL");
  }
}

void require_windows_loaded() {
  int loaded = 0;
  ARFIT_NCCL_CHECK(ncclGetVersion(&loaded));
  if (loaded < kFirstSymmetricVersion) {
    throw KernelError(std::string(kWho) + " needs NCCL >= " + version_text(kFirstSymmetricVersion) +
                      " (ncclCommWindowRegister); the libnccl loaded is " + version_text(loaded) + ": use NCCL");
  }
}

void validate_case(const StrategyCase& c, const StrategyLimits& limits) {
  detail::validate_nccl_case(Collective::AllReduce, {FusionOp::None}, c, limits);
  detail::require_positive_count(kWho, c);
  require_windows_compiled();
}

void validate(const StrategyContext& ctx, const StrategyCase& c) {
  detail::validate_nccl_all_reduce_context(kWho, {FusionOp::None}, ctx, c);
  detail::require_positive_count(kWho, c);
  require_windows_compiled();
  require_windows_loaded();
}

#if defined(NCCL_VERSION_CODE) && NCCL_VERSION_CODE >= 22700

// One ncclMemAlloc'd buffer registered as a symmetric window of the communicator. Registration and deregistration
// are collective: every rank creates and destroys its buffers in the same order (init and the state's destructor).
class SymmetricWindow {
 public:
  SymmetricWindow(ncclComm_t comm, std::size_t bytes) : comm_(comm), bytes_(std::max<std::size_t>(bytes, 16)) {
    ARFIT_NCCL_CHECK(ncclMemAlloc(&data_, bytes_));
    ARFIT_NCCL_CHECK(ncclCommWindowRegister(comm_, data_, bytes_, &window_, NCCL_WIN_COLL_SYMMETRIC));
  }
  ~SymmetricWindow() {
    // Errors here cannot be reported (destructor): the communicator may already be aborting.
    if (window_) (void)ncclCommWindowDeregister(comm_, window_);
    if (data_) (void)ncclMemFree(data_);
  }
  SymmetricWindow(const SymmetricWindow&) = delete;
  SymmetricWindow& operator=(const SymmetricWindow&) = delete;

  void* get() const { return data_; }
  void upload(const std::vector<unsigned char>& host) {
    ARFIT_CUDA_CHECK(cudaMemcpy(data_, host.data(), std::min(host.size(), bytes_), cudaMemcpyHostToDevice));
  }
  void fill(int byte_value) { ARFIT_CUDA_CHECK(cudaMemset(data_, byte_value, bytes_)); }
  std::vector<unsigned char> download(std::size_t bytes) const {
    std::vector<unsigned char> host(bytes);
    ARFIT_CUDA_CHECK(cudaMemcpy(host.data(), data_, bytes, cudaMemcpyDeviceToHost));
    return host;
  }

 private:
  ncclComm_t comm_;
  std::size_t bytes_;
  void* data_ = nullptr;
  ncclWindow_t window_ = nullptr;
};

struct NcclSymmetricState : StrategyState {
  StrategyContext ctx;
  StrategyCase c;
  std::unique_ptr<SymmetricWindow> input, output;  // output is null in place
};

void load_inputs(NcclSymmetricState& s) {
  s.input->upload(detail::seeded_host(s.c.dtype, s.c.count, s.ctx.seed, InputRole::Data, s.ctx.first_rank));
  if (s.output) s.output->fill(detail::kPoisonByte);
}

std::unique_ptr<StrategyState> init(const StrategyContext& ctx, const StrategyCase& c) {
  validate(ctx, c);
  ARFIT_CUDA_CHECK(cudaSetDevice(ctx.device));
  auto s = std::make_unique<NcclSymmetricState>();
  s->ctx = ctx;
  s->c = c;
  const auto comm = static_cast<ncclComm_t>(ctx.nccl_comm);
  const auto bytes = static_cast<std::size_t>(c.count * dtype_bytes(c.dtype));
  s->input = std::make_unique<SymmetricWindow>(comm, bytes);
  if (!c.in_place) s->output = std::make_unique<SymmetricWindow>(comm, bytes);
  load_inputs(*s);
  ARFIT_CUDA_CHECK(cudaDeviceSynchronize());
  return s;
}

void* output_of(const NcclSymmetricState& s) { return s.output ? s.output->get() : s.input->get(); }

void run(StrategyState& state, void* stream) {
  auto& s = static_cast<NcclSymmetricState&>(state);
  nccl_all_reduce(s.input->get(), output_of(s), s.c.count, s.c.dtype, static_cast<ncclComm_t>(s.ctx.nccl_comm),
                  static_cast<cudaStream_t>(stream));
}

CheckResult check(StrategyState& state) {
  auto& s = static_cast<NcclSymmetricState&>(state);
  ARFIT_CUDA_CHECK(cudaSetDevice(s.ctx.device));
  ARFIT_CUDA_CHECK(cudaDeviceSynchronize());
  load_inputs(s);
  run(s, nullptr);
  ARFIT_CUDA_CHECK(cudaDeviceSynchronize());
  RankOutputs o;
  o.rank = s.ctx.first_rank;
  o.output = (s.output ? *s.output : *s.input).download(static_cast<std::size_t>(s.c.count * dtype_bytes(s.c.dtype)));
  // NCCL's allowance (the symmetric kernels may reduce in fewer steps, never in more).
  return detail::check_nccl_all_reduce_outputs(s.c, s.ctx.seed, std::move(o));
}

#else

std::unique_ptr<StrategyState> init(const StrategyContext& ctx, const StrategyCase& c) {
  validate(ctx, c);  // throws: no windows in this NCCL
  return nullptr;
}
void run(StrategyState&, void*) { require_windows_compiled(); }
CheckResult check(StrategyState&) {
  require_windows_compiled();
  return {};
}

#endif

}  // namespace

const StrategyDescriptor nccl_symmetric_all_reduce_strategy = detail::nccl_descriptor(
    Collective::AllReduce, strategy::kNcclSymmetric, {FusionOp::None}, {validate_case, validate, init, run, check});

}  // namespace arfit::kernels
