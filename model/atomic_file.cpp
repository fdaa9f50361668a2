#include "model/atomic_file.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

namespace arfit {

void write_file_atomically(const std::string& path, const std::function<void(std::ostream&)>& write) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  try {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(path + ": cannot open for writing: " + std::strerror(errno));
    write(out);
    out.flush();
    if (!out) throw std::runtime_error(path + ": write failed");
    out.close();
    if (std::rename(tmp.c_str(), path.c_str()) != 0)
      throw std::runtime_error(path + ": cannot rename temporary file: " + std::strerror(errno));
  } catch (...) {
    std::remove(tmp.c_str());
    throw;
  }
}

void write_string_atomically(const std::string& path, const std::string& content) {
  write_file_atomically(path, [&](std::ostream& os) { os << content; });
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace arfit
