// The system's reason for an errno value, as io/'s messages quote it ("No space left on device").
#pragma once

#include <cstring>
#include <string>

namespace arfit::io_detail {

inline std::string sys_reason(int err) { return std::strerror(err); }

}  // namespace arfit::io_detail
