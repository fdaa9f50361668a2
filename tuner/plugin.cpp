// arfit's NCCL tuner plugin: the C ABI NCCL loads (NCCL_TUNER_PLUGIN=arfit finds libnccl-tuner-arfit.so), one
// versioned struct per tuner API version -- ncclTunerPlugin_v6 (NCCL 2.30.3+), _v5 (2.28.3+), _v4 (2.24.3+), _v3
// (2.22.3+); NCCL takes the newest it knows. Each communicator's init loads ARFIT_TUNER_FILE (a models file of
// `arfit fit` or a rules file of `arfit codegen --format nccl-tuner`; ARFIT_TUNER_SYSTEM picks a system) into its
// own context, so communicators on several threads share nothing. getCollInfo changes only the costs arfit has a
// model or a rule for (tuner/tuner_costs.h) and never the channel count unless a rule names one. Nothing throws
// across the ABI: a missing or bad file is logged (WARN, naming the file and line) and the plugin then changes
// nothing, since an error from init would fail the communicator and one from getCollInfo the collective.
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>

#include "tuner/abi/tuner_v3.h"
#include "tuner/abi/tuner_v4.h"
#include "tuner/abi/tuner_v5.h"
#include "tuner/abi/tuner_v6.h"
#include "tuner/tuner_costs.h"

namespace {

struct Context {
  ncclDebugLogger_t logger = nullptr;
  std::size_t nranks = 0, nnodes = 1;
  std::optional<arfit::tuner::TunerCosts> costs;
};

// NCCL's logger (NULL in some drivers): INIT|TUNING, so that NCCL_DEBUG=INFO shows it with the default subsystems.
void log(const Context& c, ncclDebugLogLevel level, int line, const std::string& message) {
  if (c.logger) c.logger(level, ARFIT_NCCL_INIT | ARFIT_NCCL_TUNING, __FILE__, line, "%s", message.c_str());
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

void load_costs(Context& c) {
  const std::string file = env("ARFIT_TUNER_FILE");
  const std::string comm = "communicator of " + std::to_string(c.nranks) + " rank(s) on " + std::to_string(c.nnodes) + " node(s)";
  if (file.empty()) {
    log(c, NCCL_LOG_INFO, __LINE__, "arfit tuner: ARFIT_TUNER_FILE is not set; NCCL's own choices stand (" + comm + ")");
    return;
  }
  try {
    c.costs = arfit::tuner::TunerCosts::load(file, env("ARFIT_TUNER_SYSTEM"));
    log(c, NCCL_LOG_INFO, __LINE__, "arfit tuner: loaded " + c.costs->description() + " for a " + comm);
  } catch (const std::exception& e) {
    log(c, NCCL_LOG_WARN, __LINE__, std::string("arfit tuner: not used, NCCL's own choices stand: ") + e.what());
  }
}

ncclResult_t init_context(void** context, std::size_t nranks, std::size_t nnodes, ncclDebugLogger_t logger) noexcept {
  if (!context) return ncclInvalidArgument;
  try {
    auto c = std::make_unique<Context>();
    c->logger = logger;
    c->nranks = nranks;
    c->nnodes = nnodes;
    load_costs(*c);
    *context = c.release();
    return ncclSuccess;
  } catch (...) {  // out of memory: no context
    return ncclSystemError;
  }
}

ncclResult_t get_coll_info(void* context, ncclFunc_t coll, std::size_t bytes, int pipe_ops, float** cost_table,
                           int num_algo, int num_proto, int reg_buff, int* nchannels) noexcept {
  const auto* c = static_cast<const Context*>(context);
  if (!c || !c->costs || !cost_table) return ncclSuccess;
  try {
    arfit::tuner::CollCall call;
    call.function = static_cast<int>(coll);
    call.bytes = bytes;
    call.nranks = c->nranks;
    call.nnodes = c->nnodes;
    call.pipe_ops = pipe_ops;
    call.reg_buff = reg_buff;
    // NCCL's float** is a cast of its contiguous float[numAlgo][numProto]: read it as such.
    c->costs->apply(call, reinterpret_cast<float*>(cost_table), num_algo, num_proto, nchannels);
  } catch (...) {  // NCCL's costs stand
  }
  return ncclSuccess;
}

ncclResult_t finalize(void* context) noexcept {
  delete static_cast<Context*>(context);
  return ncclSuccess;
}

ncclResult_t init_v3(std::size_t nranks, std::size_t nnodes, ncclDebugLogger_t logger, void** context) {
  return init_context(context, nranks, nnodes, logger);
}
ncclResult_t init_v5(void** context, uint64_t, std::size_t nranks, std::size_t nnodes, ncclDebugLogger_t logger,
                     ncclNvlDomainInfo_v5_t*, ncclTunerConstants_v5_t*) {
  return init_context(context, nranks, nnodes, logger);  // NCCL's constants stay as NCCL set them
}
ncclResult_t get_coll_info_v3(void* context, ncclFunc_t coll, std::size_t bytes, int pipe_ops, float** cost_table,
                              int num_algo, int num_proto, int* nchannels) {
  return get_coll_info(context, coll, bytes, pipe_ops, cost_table, num_algo, num_proto, 0, nchannels);
}

}  // namespace

// The exported data objects NCCL looks up with dlsym (extern: a namespace-scope const would have internal linkage).
#define ARFIT_EXPORT extern __attribute__((visibility("default")))
extern "C" {
ARFIT_EXPORT const ncclTuner_v6_t ncclTunerPlugin_v6;
ARFIT_EXPORT const ncclTuner_v5_t ncclTunerPlugin_v5;
ARFIT_EXPORT const ncclTuner_v4_t ncclTunerPlugin_v4;
ARFIT_EXPORT const ncclTuner_v3_t ncclTunerPlugin_v3;

// getChunkSize NULL: NCCL's own chunk size.
const ncclTuner_v6_t ncclTunerPlugin_v6 = {"arfit", init_v5, get_coll_info, finalize, nullptr};
const ncclTuner_v5_t ncclTunerPlugin_v5 = {"arfit", init_v5, get_coll_info, finalize};
const ncclTuner_v4_t ncclTunerPlugin_v4 = {"arfit", init_v3, get_coll_info, finalize};
const ncclTuner_v3_t ncclTunerPlugin_v3 = {"arfit", init_v3, get_coll_info_v3, finalize};
}
