// TensorRT-LLM's own customAllReduceUtils.h as the base of a generated table (`arfit codegen --format trtllm
// --base FILE`): its table of one SM, read cell by cell with where each value is written, and the rules the file
// itself states (getMaxRequiredWorkspaceSize's sizes, what selectStrategyLookUpTable returns off the table).
// The generated file is that file with arfit's cells written in place: every other byte -- the cells arfit has
// no model for, comments, layout, the rest of the header -- stays as it was, so it installs by copying it over
// the engine's file.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace arfit::codegen {

struct TrtllmBaseCell {
  std::size_t offset = 0, length = 0;  // the integer literal in the file's text
  int value = 0;
  long line = 0;
};

struct TrtllmBase {
  std::string path;
  std::string text;
  int table_sm = 90;
  std::vector<TrtllmBaseCell> cells;   // [tp][fusion][hidden][tokens], TensorRT-LLM's axes (3 x 4 x 7 x 15)
  std::size_t definition_line_offset = 0;  // start of the line that declares the table
  // What the file says of its own rules, when it holds the functions (a file of the table alone does not).
  std::optional<double> workspace_tp2_bytes, workspace_bytes;
  std::optional<int> off_table_code;
};

// Reads AllReduceBestStrategyTableSM<table_sm> from `text`. Throws InputError (exit 1) naming `path`, the line
// and the table index when the table is missing, is not a nested initializer of integers, has another shape
// than TensorRT-LLM's axes, or holds a value outside 0..8.
TrtllmBase read_trtllm_base(const std::string& text, const std::string& path, int table_sm);

// The base's text with cell i's literal replaced by codes[i] wherever codes[i] differs from the base's value, and
// `banner` (comment lines) inserted before the table's declaration.
std::string patch_trtllm_base(const TrtllmBase& base, const std::vector<int>& codes, const std::string& banner);

}  // namespace arfit::codegen
