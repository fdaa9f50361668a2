// Classification of kernel names into operation classes (gemm, attention, NCCL all-reduce, custom one-shot
// all-reduce, MoE expert GEMM, ...). The rule table is data: trace/rules/default_rules.json, embedded into the
// library at build time; users extend or replace it with --rules FILE (same shape).
//
// Patterns are RE2 regular expressions (linear time in the name's length, no recursion), so a hostile or
// absurdly long kernel name or user pattern cannot blow the stack or run away; see docs/trace.md.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model/sample.h"

namespace re2 {
class RE2;
}

namespace arfit::trace {

struct OpClass {
  std::string id;     // "nccl_all_reduce"
  std::string label;  // legend name: "NCCL all-reduce"
  bool communication = false;
  std::optional<Collective> collective;  // set for collectives what-if can re-predict
  std::string strategy;                  // "NCCL", "ONESHOT", "TWOSHOT"; empty when unknown
  FusionOp fusion = FusionOp::None;
};

// A rule matches a kernel name when `pattern` and every pattern of `all_of` are found in it (case-insensitive,
// anywhere): all_of states what a name must say regardless of word order ("rsqrt", "mean", "pow" for an
// Inductor-fused RMSNorm).
struct KernelRule {
  std::string op_class;
  std::string pattern;
  std::vector<std::string> all_of;
  std::vector<std::shared_ptr<const re2::RE2>> compiled;  // pattern, then all_of, in order
  bool matches(const std::string& kernel_name) const;
};

class RuleTable {
 public:
  // The built-in table (trace/rules/default_rules.json).
  static const RuleTable& defaults();
  // Parses a rule file's JSON. `name` appears in errors (InputError with the JSON path of the bad field).
  static RuleTable parse(const std::string& text, const std::string& name);
  // A user file: its rules first, then the defaults' (unless it sets "replace_defaults": true).
  static RuleTable load_user(const std::string& path);

  // nullptr when no rule matches (the kernel is "unmatched").
  const OpClass* classify(const std::string& kernel_name) const;
  const OpClass* find_class(const std::string& id) const;
  const std::vector<OpClass>& classes() const { return classes_; }
  const std::vector<KernelRule>& rules() const { return rules_; }

 private:
  std::vector<OpClass> classes_;
  std::vector<KernelRule> rules_;
};

// The embedded default rule file's text.
const char* default_rules_json();

}  // namespace arfit::trace
