#include "codegen/trtllm_base.h"

#include <algorithm>
#include <cctype>
#include <regex>

#include "model/errors.h"

namespace arfit::codegen {

namespace {

// TensorRT-LLM's axes: TP 2,4,8; four fusion rows; hidden 128..8192; tokens 1..16384.
constexpr std::size_t kShape[] = {3, 4, 7, 15};
constexpr const char* kAxisNames[] = {"TP blocks", "fusion rows", "hidden-size rows", "token columns"};

// The text with comments, string and character literals blanked (same offsets and line breaks), so that what
// they hold is never read as code.
std::string code_only(const std::string& t) {
  std::string s = t;
  std::size_t i = 0;
  auto blank = [&](std::size_t from, std::size_t to) {
    for (std::size_t k = from; k < to && k < s.size(); ++k)
      if (s[k] != '\n') s[k] = ' ';
  };
  while (i < s.size()) {
    if (s.compare(i, 2, "//") == 0) {
      const std::size_t e = s.find('\n', i);
      blank(i, e == std::string::npos ? s.size() : e);
      i = e == std::string::npos ? s.size() : e;
    } else if (s.compare(i, 2, "/*") == 0) {
      const std::size_t e = s.find("*/", i + 2);
      const std::size_t end = e == std::string::npos ? s.size() : e + 2;
      blank(i, end);
      i = end;
    } else if (s[i] == '"' || s[i] == '\'') {
      const char q = s[i];
      std::size_t k = i + 1;
      while (k < s.size() && s[k] != q && s[k] != '\n') k += (s[k] == '\\') ? 2 : 1;
      blank(i, std::min(k + 1, s.size()));
      i = k + 1;
    } else {
      ++i;
    }
  }
  return s;
}

long line_of(const std::string& t, std::size_t offset) {
  return 1 + static_cast<long>(std::count(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(std::min(offset, t.size())), '\n'));
}

struct Parser {
  const std::string& code;  // code_only text
  const std::string& path;
  std::string table;
  std::size_t pos = 0;
  std::vector<TrtllmBaseCell> cells;

  [[noreturn]] void fail(std::size_t at, const std::string& index, const std::string& what) const {
    throw InputError(path, line_of(code, at), table + index, what);
  }
  void skip_space() {
    while (pos < code.size() && std::isspace(static_cast<unsigned char>(code[pos]))) ++pos;
  }
  // One brace level at `depth` (0 = the table): its elements, each an initializer one level down, or at the
  // last level integer literals.
  void level(std::size_t depth, const std::string& index) {
    skip_space();
    if (pos >= code.size() || code[pos] != '{') fail(pos, index, "expected '{' of a nested initializer");
    ++pos;
    std::size_t count = 0;
    for (;;) {
      skip_space();
      if (pos < code.size() && code[pos] == '}') break;
      const std::string child = index + "[" + std::to_string(count) + "]";
      if (depth + 1 < std::size(kShape)) {
        level(depth + 1, child);
      } else {
        literal(child);
      }
      ++count;
      skip_space();
      if (pos < code.size() && code[pos] == ',') {
        ++pos;
        continue;
      }
      if (pos < code.size() && code[pos] == '}') break;
      fail(pos, child, "expected ',' or '}' after an element");
    }
    if (count != kShape[depth])
      fail(pos, index, std::to_string(count) + " " + kAxisNames[depth] + " where TensorRT-LLM's table has " +
                           std::to_string(kShape[depth]) + " (TP 2,4,8; NONE, RESIDUAL_RMS_NORM, ..._QUANT_FP8, "
                           "..._QUANT_NVFP4; hidden 128..8192; tokens 1..16384)");
    ++pos;  // '}'
  }
  void literal(const std::string& index) {
    const std::size_t start = pos;
    while (pos < code.size() && std::isdigit(static_cast<unsigned char>(code[pos]))) ++pos;
    if (pos == start) fail(start, index, "expected an AllReduceStrategyType number");
    if (pos - start > 3) fail(start, index, "'" + code.substr(start, pos - start) + "' is not an AllReduceStrategyType number (0..8)");
    const int value = std::stoi(code.substr(start, pos - start));
    if (value > 8) fail(start, index, std::to_string(value) + " is not an AllReduceStrategyType number (0..8)");
    cells.push_back({start, pos - start, value, line_of(code, start)});
  }
};

// Where AllReduceBestStrategyTableSM<sm> is defined: the name followed by '=' or '{' (the map entry
// `{90, AllReduceBestStrategyTableSM90}` is followed by '}').
std::size_t find_definition(const std::string& code, const std::string& name, const std::string& path) {
  const std::regex def("\\b" + name + "\\s*(=|\\{)");
  std::vector<std::size_t> found;
  for (auto it = std::sregex_iterator(code.begin(), code.end(), def); it != std::sregex_iterator(); ++it)
    found.push_back(static_cast<std::size_t>(it->position(0)));
  if (found.empty()) throw InputError(path, 0, "", "no definition of " + name + " (TensorRT-LLM's customAllReduceUtils.h holds it)");
  if (found.size() > 1)
    throw InputError(path, line_of(code, found[1]), "", name + " is defined more than once (first on line " +
                                                            std::to_string(line_of(code, found[0])) + ")");
  return found[0];
}

// The body of the function `name` (from its first '{' after the name to the matching '}'), or "".
std::string function_body(const std::string& code, const std::string& name) {
  const std::size_t at = code.find(name + "(");
  if (at == std::string::npos) return "";
  std::size_t open = code.find('{', at);
  if (open == std::string::npos) return "";
  int depth = 0;
  for (std::size_t i = open; i < code.size(); ++i) {
    if (code[i] == '{') ++depth;
    if (code[i] == '}' && --depth == 0) return code.substr(open, i - open + 1);
  }
  return "";
}

// A product of integer literals ("16 * 1000 * 1000", "67108864"), or nullopt.
std::optional<double> constant_product(const std::string& expr) {
  static const std::regex product("^\\s*\\d+(\\s*\\*\\s*\\d+)*\\s*$");
  if (!std::regex_match(expr, product)) return std::nullopt;
  double v = 1;
  static const std::regex number("\\d+");
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), number); it != std::sregex_iterator(); ++it)
    v *= std::stod(it->str());
  return v;
}

// getMaxRequiredWorkspaceSize: its constant returns (environment-variable returns are skipped); two of them
// under `worldSize <= 2` are the TP-2 size and the others'.
void read_workspace_rule(const std::string& code, TrtllmBase& base) {
  const std::string body = function_body(code, "getMaxRequiredWorkspaceSize");
  if (body.empty()) return;
  std::vector<double> constants;
  static const std::regex ret("return\\s+([^;]+);");
  for (auto it = std::sregex_iterator(body.begin(), body.end(), ret); it != std::sregex_iterator(); ++it)
    if (const auto v = constant_product((*it)[1].str())) constants.push_back(*v);
  static const std::regex tp2_branch("worldSize\\s*<=\\s*2\\b");
  if (constants.size() == 1) {
    base.workspace_tp2_bytes = base.workspace_bytes = constants[0];
  } else if (constants.size() == 2 && std::regex_search(body, tp2_branch)) {
    base.workspace_tp2_bytes = constants[0];
    base.workspace_bytes = constants[1];
  }
}

// selectStrategyLookUpTable: the strategy returned when the token index leaves the table.
void read_off_table_rule(const std::string& code, TrtllmBase& base) {
  const std::string body = function_body(code, "selectStrategyLookUpTable");
  static const std::regex off("num_token_index[^;{]*\\)\\s*\\{\\s*return\\s+AllReduceStrategyType::(\\w+)\\s*;");
  std::smatch m;
  if (!std::regex_search(body, m, off)) return;
  if (m[1] == "NCCL") base.off_table_code = 0;
  if (m[1] == "NCCL_SYMMETRIC") base.off_table_code = 8;
}

}  // namespace

TrtllmBase read_trtllm_base(const std::string& text, const std::string& path, int table_sm) {
  TrtllmBase base;
  base.path = path;
  base.text = text;
  base.table_sm = table_sm;
  const std::string code = code_only(text);
  const std::string name = "AllReduceBestStrategyTableSM" + std::to_string(table_sm);
  const std::size_t at = find_definition(code, name, path);
  base.definition_line_offset = text.rfind('\n', at) == std::string::npos ? 0 : text.rfind('\n', at) + 1;
  Parser p{code, path, name, code.find_first_of("={", at + name.size()), {}};
  if (code[p.pos] == '=') ++p.pos;
  p.level(0, "");
  base.cells = std::move(p.cells);
  read_workspace_rule(code, base);
  read_off_table_rule(code, base);
  return base;
}

std::string patch_trtllm_base(const TrtllmBase& base, const std::vector<int>& codes, const std::string& banner) {
  std::string out;
  out.reserve(base.text.size() + banner.size());
  std::size_t copied = 0;
  auto copy_to = [&](std::size_t offset) {
    out.append(base.text, copied, offset - copied);
    copied = offset;
  };
  copy_to(base.definition_line_offset);
  out += banner;
  for (std::size_t i = 0; i < base.cells.size() && i < codes.size(); ++i) {
    const TrtllmBaseCell& c = base.cells[i];
    if (codes[i] == c.value) continue;
    copy_to(c.offset);
    out += std::to_string(codes[i]);
    copied = c.offset + c.length;
  }
  copy_to(base.text.size());
  return out;
}

}  // namespace arfit::codegen
