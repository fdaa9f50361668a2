// A driver that loads arfit's tuner plugin the way NCCL does (src/plugin/plugin_open.cc: dlopen RTLD_NOW |
// RTLD_LOCAL, dlsym of the data object ncclTunerPlugin_vN) and calls it as src/enqueue.cc's ncclGetAlgoInfo does:
// a contiguous float[numAlgo][numProto] cost table passed as float**, every entry NCCL cannot run at -1
// (NCCL_ALGO_PROTO_IGNORE), the others at NCCL's own estimates in microseconds, nChannels 0 on entry; NCCL then
// takes the strict minimum of the entries >= 0 (ties: lowest algorithm, then protocol). Re-declares nothing: the
// structs are tuner/abi's.
#pragma once

#include <dlfcn.h>

#include <cfloat>
#include <cstdarg>
#include <cstdio>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "tuner/abi/tuner_v3.h"
#include "tuner/abi/tuner_v4.h"
#include "tuner/abi/tuner_v5.h"
#include "tuner/abi/tuner_v6.h"

namespace arfit::nccl_driver {

// What the plugin logged through NCCL's logger.
struct LogLine {
  int level;
  unsigned long flags;
  std::string text;
};
inline std::mutex& log_mutex() {
  static std::mutex m;
  return m;
}
inline std::vector<LogLine>& log_lines() {
  static std::vector<LogLine> lines;
  return lines;
}
inline void logger(ncclDebugLogLevel level, unsigned long flags, const char*, int, const char* fmt, ...) {
  char buf[1024];  // NCCL formats into 1024 bytes too
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  std::lock_guard<std::mutex> lock(log_mutex());
  log_lines().push_back({static_cast<int>(level), flags, buf});
}
inline std::vector<LogLine> take_log() {
  std::lock_guard<std::mutex> lock(log_mutex());
  return std::exchange(log_lines(), {});
}

// NCCL's cost table of one call: float[num_algo][num_proto], with a canary after it (a plugin that writes past
// numAlgo x numProto -- 6 algorithms before NCCL 2.23.4 -- overwrites it).
struct CostTable {
  int num_algo = 7, num_proto = 3;
  std::vector<float> cells;  // num_algo * num_proto, then 3 canaries
  CostTable(int algos, int protos) : num_algo(algos), num_proto(protos), cells(algos * protos + 3, 12345.0f) {
    for (int a = 0; a < algos; ++a)
      for (int p = 0; p < protos; ++p) at(a, p) = 100.0f + 10.0f * a + p;  // NCCL-like estimates, microseconds
  }
  float& at(int a, int p) { return cells[a * num_proto + p]; }
  float at(int a, int p) const { return cells[a * num_proto + p]; }
  void ignore(int a, int p) { at(a, p) = static_cast<float>(NCCL_ALGO_PROTO_IGNORE); }
  bool canaries_intact() const {
    for (std::size_t i = num_algo * num_proto; i < cells.size(); ++i)
      if (cells[i] != 12345.0f) return false;
    return true;
  }
  float** as_nccl_passes_it() { return reinterpret_cast<float**>(cells.data()); }
  // topoGetAlgoInfo's choice: the strict minimum of the entries >= 0; {-1, -1} when none.
  std::pair<int, int> nccl_choice() const {
    float best = FLT_MAX;
    std::pair<int, int> choice{-1, -1};
    for (int a = 0; a < num_algo; ++a)
      for (int p = 0; p < num_proto; ++p)
        if (at(a, p) != static_cast<float>(NCCL_ALGO_PROTO_IGNORE) && at(a, p) >= 0.0f && at(a, p) < best) best = at(a, p), choice = {a, p};
    return choice;
  }
};

// The plugin library and its four versioned entry points.
class Plugin {
 public:
  explicit Plugin(const std::string& path) : handle_(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) {}
  ~Plugin() {
    if (handle_) dlclose(handle_);
  }
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;
  bool loaded() const { return handle_ != nullptr; }
  static std::string error() {
    const char* e = dlerror();
    return e ? e : "";
  }
  template <typename T>
  const T* symbol(const char* name) const {
    return handle_ ? static_cast<const T*>(dlsym(handle_, name)) : nullptr;
  }

 private:
  void* handle_;
};

// One communicator through API version `version` (3..6): init as NCCL does, getCollInfo, finalize.
class Communicator {
 public:
  Communicator(const Plugin& plugin, int version, std::size_t nranks, std::size_t nnodes) : version_(version) {
    if (version == 3) v3_ = plugin.symbol<ncclTuner_v3_t>("ncclTunerPlugin_v3");
    if (version == 4) v4_ = plugin.symbol<ncclTuner_v4_t>("ncclTunerPlugin_v4");
    if (version == 5) v5_ = plugin.symbol<ncclTuner_v5_t>("ncclTunerPlugin_v5");
    if (version == 6) v6_ = plugin.symbol<ncclTuner_v6_t>("ncclTunerPlugin_v6");
    ncclNvlDomainInfo_v5_t nvl{static_cast<int>(nnodes), static_cast<int>(nranks / nnodes), static_cast<int>(nranks / nnodes)};
    if (v3_) init_result_ = v3_->init(nranks, nnodes, logger, &context_);
    if (v4_) init_result_ = v4_->init(nranks, nnodes, logger, &context_);
    if (v5_) init_result_ = v5_->init(&context_, 0x1234u, nranks, nnodes, logger, &nvl, &constants_);
    if (v6_) init_result_ = v6_->init(&context_, 0x1234u, nranks, nnodes, logger, &nvl, &constants_);
  }
  ~Communicator() {
    if (v3_) v3_->destroy(context_);
    if (v4_) v4_->destroy(context_);
    if (v5_) v5_->finalize(context_);
    if (v6_) v6_->finalize(context_);
  }
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;
  bool found() const { return v3_ || v4_ || v5_ || v6_; }
  ncclResult_t init_result() const { return init_result_; }
  const ncclTunerConstants_v5_t& constants() const { return constants_; }
  const char* name() const { return v3_ ? v3_->name : v4_ ? v4_->name : v5_ ? v5_->name : v6_ ? v6_->name : ""; }
  bool leaves_chunk_size_to_nccl() const { return !v6_ || v6_->getChunkSize == nullptr; }

  // getCollInfo as ncclGetAlgoInfo calls it; returns its result, *nchannels as the plugin left it (0 on entry).
  ncclResult_t coll_info(int function, std::size_t bytes, CostTable& table, int* nchannels, int reg_buff = 0) {
    *nchannels = 0;
    const auto f = static_cast<ncclFunc_t>(function);
    if (v3_) return v3_->getCollInfo(context_, f, bytes, 1, table.as_nccl_passes_it(), table.num_algo, table.num_proto, nchannels);
    if (v4_) return v4_->getCollInfo(context_, f, bytes, 1, table.as_nccl_passes_it(), table.num_algo, table.num_proto, reg_buff, nchannels);
    if (v5_) return v5_->getCollInfo(context_, f, bytes, 1, table.as_nccl_passes_it(), table.num_algo, table.num_proto, reg_buff, nchannels);
    return v6_->getCollInfo(context_, f, bytes, 1, table.as_nccl_passes_it(), table.num_algo, table.num_proto, reg_buff, nchannels);
  }

 private:
  int version_;
  const ncclTuner_v3_t* v3_ = nullptr;
  const ncclTuner_v4_t* v4_ = nullptr;
  const ncclTuner_v5_t* v5_ = nullptr;
  const ncclTuner_v6_t* v6_ = nullptr;
  void* context_ = nullptr;
  ncclTunerConstants_v5_t constants_{};
  ncclResult_t init_result_ = ncclInternalError;
};

}  // namespace arfit::nccl_driver
