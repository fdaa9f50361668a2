// Shared helpers of the trace tests: the hand-written inputs in tests/trace/data.
#pragma once

#include <string>

#include "test_support.h"

inline std::string trace_data(const std::string& name) { return arfit::testing::source_dir() + "/tests/trace/data/" + name; }
