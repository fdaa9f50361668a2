// The banner every generated file starts with: generator, arfit version, inputs (with FNV-1a hashes), date and
// command, and "do not edit". Output is a pure function of (table, banner): the same inputs give byte-identical
// files, so the date is never the wall clock (resolve_date).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/text.h"

namespace arfit::codegen {

struct InputFile {
  std::string path;
  std::string fnv1a64;  // 16 hex digits of the content hash
};

struct Banner {
  std::string generator = "arfit codegen";
  std::string version;                 // arfit version
  std::vector<InputFile> inputs;
  std::string date;                    // YYYY-MM-DD, never the wall clock (see resolve_date)
  std::string command;                 // the options that shaped the output, for reproduction
  std::vector<std::string> notes;      // extra lines (what the file is for, how a consumer reads it)
};

// FNV-1a 64 of a byte string, as 16 lower-case hex digits (model/text.h; also what `arfit fit` prints).
using arfit::fnv1a64_hex;

// The date written into banners, chosen so that output is reproducible:
//   1. `explicit_date` (--date YYYY-MM-DD) when not empty (validated; throws std::invalid_argument),
//   2. else SOURCE_DATE_EPOCH (seconds since 1970, UTC; reproducible-builds.org convention),
//   3. else a "date" or "created" string field of the models JSON (first 10 characters),
//   4. else the modification time of the models file (UTC), 5. else "unknown".
std::string resolve_date(const std::string& explicit_date, const nlohmann::json& models_json,
                         const std::string& models_path);

// The banner as comment lines: `what` first, then generator, inputs, date, command and notes, each line
// prefixed with `prefix` ("// ", "# "). With max_width > 0 no line (newline excluded) is longer than max_width:
// longer text continues on the next comment line (NCCL's example tuner reads 255-character lines).
std::string banner_text(const Banner& banner, const std::string& prefix, const std::string& what,
                        std::size_t max_width = 0);

// `text` as comment lines of at most max_width characters (0: one line), each starting with `prefix` ("// " for
// C++, else "#"-style); the text passes through comment_text (codegen/safe_text.h) first.
std::string comment_lines(const std::string& text, const std::string& prefix, std::size_t max_width = 0);

}  // namespace arfit::codegen
