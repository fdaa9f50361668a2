#include "trace/kernel_name.h"

#include <array>
#include <cctype>
#include <utility>
#include <vector>

#include "model/sample.h"
#include "model/text.h"

namespace arfit::trace {

namespace {

// The name without a leading return type and without its trailing parameter list.
std::string signature_head(const std::string& full) {
  std::string s = full.rfind("void ", 0) == 0 ? full.substr(5) : full;
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (std::size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')') ++depth;
      if (s[i] == '(' && --depth == 0) {
        if (i > 0) s = s.substr(0, i);
        break;
      }
    }
  }
  return s;
}

// Words of a name: runs of letters and digits ("__nv_bfloat16" -> "nv", "bfloat16").
std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::string w;
  for (char c : s) {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      w += c;
    } else if (!w.empty()) {
      out.push_back(std::move(w));
      w.clear();
    }
  }
  if (!w.empty()) out.push_back(std::move(w));
  return out;
}

// NCCL's element types, in both generations' spellings.
std::string nccl_dtype(const std::string& word) {
  static const std::array<std::pair<const char*, const char*>, 20> table{{
      {"i8", "int8"}, {"u8", "uint8"}, {"i32", "int32"}, {"u32", "uint32"}, {"i64", "int64"}, {"u64", "uint64"},
      {"f16", "fp16"}, {"f32", "fp32"}, {"f64", "fp64"}, {"bf16", "bf16"}, {"f8e4m3", "fp8_e4m3"}, {"f8e5m2", "fp8_e5m2"},
      {"half", "fp16"}, {"float", "fp32"}, {"double", "fp64"}, {"bfloat16", "bf16"}, {"int8", "int8"}, {"uint8", "uint8"},
      {"int32", "int32"}, {"uint32", "uint32"}}};
  std::string w = lower(word);
  for (const auto& [spelling, canonical] : table)
    if (w == spelling) return canonical;
  if (w == "int64" || w == "uint64") return w;
  return "";
}

// Element-type spellings in other kernels' names and template arguments, most specific first (substring match
// on the lower-cased text): the spelling and its canonical dtype.
const std::array<std::pair<const char*, const char*>, 15>& dtype_spellings() {
  static const std::array<std::pair<const char*, const char*>, 15> table{{
      {"bfloat16", "bf16"}, {"bf16", "bf16"}, {"e4m3", "fp8_e4m3"}, {"e5m2", "fp8_e5m2"}, {"e2m1", "fp4"}, {"fp4", "fp4"},
      {"fp8", "fp8_e4m3"}, {"float16", "fp16"}, {"half", "fp16"}, {"fp16", "fp16"}, {"fp32", "fp32"}, {"float32", "fp32"},
      {"int8", "int8"}, {"uint8", "uint8"}, {"float", "fp32"}}};
  return table;
}

std::string other_dtype(const std::string& head) {
  std::string l = lower(head);
  std::size_t best = std::string::npos;
  std::string dtype;
  for (const auto& [spelling, canonical] : dtype_spellings()) {
    auto at = l.find(spelling);
    // "float" only as a word of its own (not "float_e4m3_t", "float2").
    while (at != std::string::npos && std::string(spelling) == "float" && at + 5 < l.size() && (std::isalnum(static_cast<unsigned char>(l[at + 5])) || l[at + 5] == '_'))
      at = l.find(spelling, at + 1);
    if (at < best) {  // the first type named wins ("e4m3bf16": fp8 input)
      best = at;
      dtype = canonical;
    }
  }
  return dtype;
}

bool is_nccl_algorithm(const std::string& w) {
  return w == "RING" || w == "TREE" || w == "NVLS" || w == "NVLSTREE" || w == "COLLNET" || w == "PAT" || w == "DIRECT" || w == "CHAIN";
}
bool is_nccl_protocol(const std::string& w) { return w == "LL" || w == "LL128" || w == "SIMPLE"; }
bool is_nccl_op(const std::string& w) {
  return w == "Sum" || w == "Prod" || w == "Max" || w == "Min" || w == "PreMulSum" || w == "SumPostDiv" || w == "MinMax";
}

// An NCCL kernel name read word by word ('_'-separated; NCCL's own names have no other separators before '(').
struct NcclName {
  KernelNameFacts facts;
  std::string collective;      // "AllReduce", "ReduceScatter", "SendRecv", "Generic"
  std::string dtype_spelling;  // as written: "bf16", "half"
};

NcclName read_nccl_name(const std::string& head) {
  NcclName n;
  std::vector<std::string> parts;
  std::string w;
  for (char c : head) {
    if (c == '_') {
      parts.push_back(w);
      w.clear();
    } else {
      w += c;
    }
  }
  parts.push_back(w);
  std::string algorithm, protocol;
  for (std::size_t i = 1; i < parts.size(); ++i) {  // parts[0]: "ncclDevKernel" / "ncclKernel"
    const std::string& part = parts[i];
    if (n.facts.reduce_op.empty() && is_nccl_op(part)) {
      n.facts.reduce_op = part;
    } else if (n.facts.dtype.empty() && !nccl_dtype(part).empty()) {
      n.facts.dtype = nccl_dtype(part);
      n.dtype_spelling = part;
    } else if (is_nccl_algorithm(part)) {
      algorithm += (algorithm.empty() ? "" : "_") + part;
    } else if (protocol.empty() && is_nccl_protocol(part)) {
      protocol = part;
    } else if (n.collective.empty() && !part.empty()) {
      n.collective = part;
    }
  }
  if (!algorithm.empty()) n.facts.algorithm = algorithm + (protocol.empty() ? "" : "_" + protocol);
  return n;
}

// "nccl AllReduce bf16 RING_LL": the collective, the reduction op unless it is the usual Sum, the element type
// as NCCL spells it, algorithm and protocol.
std::string compact_nccl_name(const NcclName& n) {
  std::string out = "nccl " + (n.collective.empty() ? std::string("kernel") : n.collective);
  if (!n.facts.reduce_op.empty() && n.facts.reduce_op != "Sum") out += " " + n.facts.reduce_op;
  if (!n.dtype_spelling.empty()) out += " " + n.dtype_spelling;
  if (!n.facts.algorithm.empty()) out += " " + n.facts.algorithm;
  return out;
}

bool is_nccl_kernel(const std::string& head) { return head.rfind("ncclDevKernel_", 0) == 0 || head.rfind("ncclKernel_", 0) == 0; }

std::string other_algorithm(const std::string& head) {
  std::string l = lower(head);
  for (const auto& [spelling, name] : std::array<std::pair<const char*, const char*>, 6>{
           {{"oneshot", "oneshot"}, {"one_shot", "oneshot"}, {"twoshot", "twoshot"}, {"two_shot", "twoshot"}, {"1stage", "1stage"}, {"2stage", "2stage"}}})
    if (l.find(spelling) != std::string::npos) return name;
  return "";
}

// Does the (shortened) text still say this fact? Any spelling of the dtype counts ("bf16" for "__nv_bfloat16").
bool says_dtype(const std::string& text, const std::string& dtype) {
  std::string l = lower(text);
  if (l.find(lower(dtype)) != std::string::npos) return true;
  for (const auto& [spelling, canonical] : dtype_spellings())
    if (canonical == dtype && l.find(spelling) != std::string::npos) return true;
  for (const auto& w : words(text))
    if (nccl_dtype(w) == dtype) return true;
  return false;
}

bool says_algorithm(const std::string& text, const std::string& algorithm) {
  std::string l = lower(text), a = lower(algorithm);
  if (l.find(a) != std::string::npos) return true;
  if (a == "oneshot") return l.find("one_shot") != std::string::npos;
  if (a == "twoshot") return l.find("two_shot") != std::string::npos;
  return false;
}

// The name itself: base name (or the first template argument of a generic base), last namespace component.
std::string base_name(const std::string& head, const std::string& full) {
  std::string base, first_arg;
  int depth = 0;
  for (char c : head) {
    if (c == '<') {
      if (depth == 0) first_arg.clear();
      ++depth;
      continue;
    }
    if (c == '>') {
      --depth;
      continue;
    }
    if (depth == 0) base += c;
    else if (depth == 1 && first_arg.find(',') == std::string::npos) first_arg += c;
  }
  if (auto comma = first_arg.find(','); comma != std::string::npos) first_arg = first_arg.substr(0, comma);
  auto last_ident = [](const std::string& x) {
    auto p = x.rfind("::");
    std::string r = p == std::string::npos ? x : x.substr(p + 2);
    auto b = r.find_first_not_of(' ');
    return b == std::string::npos ? std::string() : r.substr(b);
  };
  std::string lb = lower(last_ident(base));
  bool generic = lb.empty() || lb == "kernel" || lb == "kernel2" || lb == "device_kernel" || lb == "kernel_entry" || lb == "global_kernel";
  std::string out = (generic && !first_arg.empty()) ? last_ident(first_arg) : (base.empty() ? full : base);
  // Keep namespaces short: "at::native::(anonymous namespace)::foo" -> "foo".
  if (out.find("::") != std::string::npos) out = last_ident(out);
  while (!out.empty() && out.back() == ' ') out.pop_back();
  if (out.empty()) out = full;
  return out;
}

std::string cut_middle(const std::string& s, std::size_t max_len) {
  if (s.size() <= max_len || max_len <= 5) return s;
  std::size_t keep = max_len - 3;
  return s.substr(0, keep - keep / 3) + "..." + s.substr(s.size() - keep / 3);
}

}  // namespace

KernelNameFacts kernel_name_facts(const std::string& name) {
  std::string head = signature_head(name);
  if (is_nccl_kernel(head)) return read_nccl_name(head).facts;
  KernelNameFacts f;
  f.dtype = other_dtype(head);
  f.algorithm = other_algorithm(head);
  return f;
}

std::string shorten_name(const std::string& full, std::size_t max_len) {
  std::string head = signature_head(full);
  std::string name = is_nccl_kernel(head) ? compact_nccl_name(read_nccl_name(head)) : base_name(head, full);
  KernelNameFacts facts = kernel_name_facts(full);
  // What the full name says and the short one would not: appended, with room made for it.
  auto missing = [&](const std::string& text) {
    std::string m;
    if (!facts.dtype.empty() && !says_dtype(text, facts.dtype)) m = facts.dtype;
    if (!facts.algorithm.empty() && !says_algorithm(text, facts.algorithm)) m += (m.empty() ? "" : ",") + facts.algorithm;
    return m.empty() ? m : "<" + m + ">";
  };
  std::string out = cut_middle(name, max_len);
  std::string suffix = missing(out);
  if (!suffix.empty() && max_len > suffix.size() + 8) {
    out = cut_middle(name, max_len - suffix.size());
    out += missing(out);
  }
  return out;
}

}  // namespace arfit::trace
