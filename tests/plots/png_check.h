// Reads the IHDR chunk of a PNG: a valid signature, IHDR first, and the image size.
#pragma once

#include <cstdint>
#include <fstream>
#include <string>

namespace arfit::plots::testing {

struct PngInfo {
  bool valid = false;
  std::uint32_t width = 0, height = 0;
  std::string problem;
};

inline PngInfo read_png_header(const std::string& path) {
  PngInfo info;
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    info.problem = "cannot open " + path;
    return info;
  }
  unsigned char b[33] = {};
  in.read(reinterpret_cast<char*>(b), sizeof b);
  if (in.gcount() != static_cast<std::streamsize>(sizeof b)) {
    info.problem = "shorter than a PNG header";
    return info;
  }
  static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  for (int i = 0; i < 8; ++i)
    if (b[i] != sig[i]) {
      info.problem = "bad PNG signature";
      return info;
    }
  auto be32 = [&](int o) {
    return (std::uint32_t{b[o]} << 24) | (std::uint32_t{b[o + 1]} << 16) | (std::uint32_t{b[o + 2]} << 8) | b[o + 3];
  };
  if (be32(8) != 13 || std::string(reinterpret_cast<char*>(b + 12), 4) != "IHDR") {
    info.problem = "first chunk is not a 13-byte IHDR";
    return info;
  }
  info.width = be32(16);
  info.height = be32(20);
  // The file must also end with an IEND chunk (a render cut short would not).
  in.seekg(-12, std::ios::end);
  char tail[12] = {};
  in.read(tail, 12);
  if (std::string(tail + 4, 4) != "IEND") {
    info.problem = "no IEND chunk at the end";
    return info;
  }
  info.valid = info.width > 0 && info.height > 0;
  return info;
}

}  // namespace arfit::plots::testing
