// Readers for Nsight Systems reports exported as CSV:
//   nsys stats --report cuda_gpu_kern_sum --format csv  -> one row per kernel name (total time, instances)
//   nsys stats --report cuda_gpu_trace    --format csv  -> one row per kernel/memcpy/memset launch
// and, to tell phases apart in a cuda_gpu_trace, an NVTX range report (nvtx_gpu_proj_trace, preferred since
// its times are on the GPU timeline, or nvtx_pushpop_trace). Lines before the header (nsys' "Processing ..."
// banner) are skipped; columns are found by name, and the time unit is read from the header ("(ns)", "(us)").
#pragma once

#include <string>

#include "trace/profile.h"

namespace arfit::trace {

struct NsysOptions {
  std::string nvtx_text;  // contents of an NVTX range report; empty = none
  std::string nvtx_name;  // its file name, for messages
};

// Phases: without NVTX, one phase "all". With NVTX, ranges whose name contains "prefill" become prefill
// phases and those containing "decode" decode steps (numbered in time order); each kernel goes to the
// innermost such range holding its start (the latest-starting one; of ranges starting together, the shortest;
// of ranges alike, the later in the report); kernels outside every phase range go to a phase named
// "outside_nvtx" (kept, never dropped). A kern_sum report cannot be split and rejects NVTX.
// Rows are read one at a time (memory: the text and the kernels per phase, not every cell).
// Throws arfit::InputError naming file, line and column on a missing header/column or a non-numeric cell, and
// naming file and line on a row whose cells are not the header's (truncated, an unquoted comma, an open quote) or
// a repeated header (two reports concatenated), in the kernel reports and the NVTX report alike.
Profile parse_nsys_csv(const std::string& text, const std::string& name, const NsysOptions& opt = {});
Profile read_nsys_csv(const std::string& path, const NsysOptions& opt = {});

bool looks_like_nsys_csv(const std::string& text);
// Whether `text` is a kernel summary (cuda_gpu_kern_sum: a "Total Time" column), which NVTX ranges cannot split,
// rather than a per-launch cuda_gpu_trace; reads the header only. Throws arfit::InputError as parse_nsys_csv
// when there is no header.
bool is_nsys_kernel_summary(const std::string& text, const std::string& name);

}  // namespace arfit::trace
