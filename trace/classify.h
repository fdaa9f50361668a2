// Classification of kernel names into operation classes (gemm, attention, NCCL all-reduce, custom one-shot
// all-reduce, ...). The rule table is data: trace/rules/default_rules.json, embedded into the library at
// build time; users extend or replace it with --rules FILE (same shape).
#pragma once

#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "model/sample.h"

namespace arfit::trace {

struct OpClass {
  std::string id;     // "nccl_all_reduce"
  std::string label;  // legend name: "NCCL all-reduce"
  bool communication = false;
  std::optional<Collective> collective;  // set for collectives what-if can re-predict
  std::string strategy;                  // "NCCL", "ONESHOT", "TWOSHOT"; empty when unknown
  FusionOp fusion = FusionOp::None;
};

struct KernelRule {
  std::string op_class;
  std::string pattern;
  std::regex re;
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
