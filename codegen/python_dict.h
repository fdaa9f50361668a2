// The dict literals an engine keeps its thresholds in, read from its own Python file (`arfit codegen --base`):
// vLLM's all_reduce_utils.py (CUSTOM_ALL_REDUCE_MAX_SIZES = {"9.0": {2: 64 * MiB, ...}}), FlashInfer's
// comm/trtllm_ar.py (_use_oneshot_heuristics: dict[int, int] = {2: 512, ...}). Only what such files hold is read:
// nested dicts with int or string keys and number values written as arithmetic of literals and module-level
// constants (MiB = 1024 * 1024); anything else is refused naming the file, line and dict, never guessed.
#pragma once

#include <map>
#include <string>

namespace arfit::codegen {

// A dict of numbers (leaves) or dicts; keys as written (a string key's text, an int key's digits).
struct PyDict {
  std::map<std::string, double> numbers;
  std::map<std::string, PyDict> dicts;
  long line = 0;  // where the dict starts
};

// The value assigned to the module-level name `name` (`name = {`, or with an annotation, `name: T = {`).
// Throws InputError (exit 1) naming `path`, the line and `name` when the name is not assigned a dict literal or
// the literal holds something else than the above.
PyDict read_python_dict(const std::string& text, const std::string& path, const std::string& name);

}  // namespace arfit::codegen
