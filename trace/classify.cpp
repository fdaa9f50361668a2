#include "trace/classify.h"

#include <nlohmann/json.hpp>
#include <re2/re2.h>

#include "io/input_file.h"
#include "model/errors.h"
#include "model/json_input.h"
#include "trace/json_locate.h"

namespace arfit::trace {

namespace {
using nlohmann::json;

[[noreturn]] void fail(const std::string& text, const std::string& name, const JsonPath& path, const std::string& what) {
  throw InputError(name, json_line_of(text, path), "", "at " + format_json_path(path) + ": " + what);
}

std::string str_field(const std::string& text, const std::string& name, const json& obj, const JsonPath& path,
                      const std::string& key, bool required) {
  auto it = obj.find(key);
  JsonPath p = path;
  p.emplace_back(key);
  if (it == obj.end()) {
    if (required) fail(text, name, path, "missing field '" + key + "'");
    return "";
  }
  if (!it->is_string()) fail(text, name, p, "'" + key + "' must be a string, got " + std::string(it->type_name()));
  return it->get<std::string>();
}

// A class id (a class's "id", a rule's "class"): required and not empty, since rules find their class by it and
// reports name the time of a class by it.
std::string id_field(const std::string& text, const std::string& name, const json& obj, const JsonPath& path, const std::string& key) {
  std::string id = str_field(text, name, obj, path, key, true);
  if (id.empty()) {
    JsonPath p = path;
    p.emplace_back(key);
    fail(text, name, p, "'" + key + "' must name a class, got an empty string");
  }
  return id;
}

// A pattern as RE2 compiles it: case-insensitive, searched anywhere. nullptr with *why set when RE2 refuses it
// (a syntax error, or what RE2 does not do: backreferences, lookaround).
std::shared_ptr<const re2::RE2> compile_pattern(const std::string& pattern, std::string* why) {
  re2::RE2::Options options;
  options.set_case_sensitive(false);
  options.set_log_errors(false);
  auto re = std::make_shared<const re2::RE2>(pattern, options);
  if (re->ok()) return re;
  *why = re->error();
  return nullptr;
}

// The pattern as messages show it: long ones cut, so an error stays readable.
std::string quoted_pattern(const std::string& pattern) {
  return "'" + (pattern.size() <= 80 ? pattern : pattern.substr(0, 77) + "...") + "'";
}

KernelRule parse_rule(const std::string& text, const std::string& name, const json& rj, std::size_t i) {
  JsonPath p{std::string("rules"), i};
  if (!rj.is_object()) fail(text, name, p, "a rule must be an object {\"class\": ..., \"regex\": ...}");
  KernelRule kr;
  kr.op_class = id_field(text, name, rj, p, "class");
  kr.pattern = str_field(text, name, rj, p, "regex", true);
  std::vector<std::pair<std::string, JsonPath>> patterns{{kr.pattern, {std::string("rules"), i, std::string("regex")}}};
  if (auto a = rj.find("all_of"); a != rj.end()) {
    JsonPath ap{std::string("rules"), i, std::string("all_of")};
    if (!a->is_array()) fail(text, name, ap, "'all_of' must be an array of regular expressions");
    for (std::size_t k = 0; k < a->size(); ++k) {
      JsonPath kp{std::string("rules"), i, std::string("all_of"), k};
      if (!(*a)[k].is_string()) fail(text, name, kp, "must be a string, got " + std::string((*a)[k].type_name()));
      kr.all_of.push_back((*a)[k].get<std::string>());
      patterns.emplace_back(kr.all_of.back(), kp);
    }
  }
  for (const auto& [pattern, where] : patterns) {
    std::string why;
    auto re = compile_pattern(pattern, &why);
    if (!re)
      fail(text, name, where,
           "rule " + std::to_string(i) + " (class '" + kr.op_class + "'): invalid regex " + quoted_pattern(pattern) + ": " + why +
               " (rules are RE2 patterns, matched in linear time: no backreferences or lookaround)");
    kr.compiled.push_back(std::move(re));
  }
  return kr;
}
}  // namespace

bool KernelRule::matches(const std::string& kernel_name) const {
  for (const auto& re : compiled)
    if (!re2::RE2::PartialMatch(kernel_name, *re)) return false;
  return !compiled.empty();
}

RuleTable RuleTable::parse(const std::string& text, const std::string& name) {
  const json root = parse_json(text, name);  // the shared JSON loading path (model/json_input.h)
  if (!root.is_object()) throw InputError(name, 1, "", "a rule file must be a JSON object with 'classes' and/or 'rules'");
  // Another JSON document (a models file, {}) is not a rule file with no rules: refused, naming what is missing.
  if (auto v = root.find("arfit_kernel_rules"); v != root.end() && !(v->is_number_integer() && *v == 1))
    fail(text, name, {std::string("arfit_kernel_rules")},
         "unsupported rule file version " + v->dump() + " (this arfit reads version 1)");
  if (!root.contains("classes") && !root.contains("rules"))
    throw InputError(name, 1, "", "not a kernel rule file: it has neither 'classes' nor 'rules' (the shape of "
                                  "trace/rules/default_rules.json)");
  RuleTable t;
  if (auto c = root.find("classes"); c != root.end()) {
    if (!c->is_array()) fail(text, name, {std::string("classes")}, "'classes' must be an array");
    for (std::size_t i = 0; i < c->size(); ++i) {
      JsonPath p{std::string("classes"), i};
      const json& cj = (*c)[i];
      if (!cj.is_object()) fail(text, name, p, "a class must be an object");
      OpClass oc;
      oc.id = id_field(text, name, cj, p, "id");
      oc.label = str_field(text, name, cj, p, "label", false);
      if (oc.label.empty()) oc.label = oc.id;
      if (auto k = cj.find("communication"); k != cj.end()) {
        if (!k->is_boolean()) fail(text, name, {std::string("classes"), i, std::string("communication")}, "must be true or false");
        oc.communication = k->get<bool>();
      }
      std::string coll = str_field(text, name, cj, p, "collective", false);
      if (!coll.empty()) {
        oc.collective = try_parse_collective(coll);
        if (!oc.collective) fail(text, name, {std::string("classes"), i, std::string("collective")}, "unknown collective '" + coll + "'");
        oc.communication = true;
      }
      oc.strategy = str_field(text, name, cj, p, "strategy", false);
      std::string fusion = str_field(text, name, cj, p, "fusion", false);
      if (!fusion.empty()) {
        auto f = try_parse_fusion(fusion);
        if (!f) fail(text, name, {std::string("classes"), i, std::string("fusion")}, "unknown fusion '" + fusion + "'");
        oc.fusion = *f;
      }
      t.classes_.push_back(std::move(oc));
    }
  }
  if (auto r = root.find("rules"); r != root.end()) {
    if (!r->is_array()) fail(text, name, {std::string("rules")}, "'rules' must be an array");
    for (std::size_t i = 0; i < r->size(); ++i) t.rules_.push_back(parse_rule(text, name, (*r)[i], i));
  }
  return t;
}

const RuleTable& RuleTable::defaults() {
  static const RuleTable t = [] {
    RuleTable d = parse(default_rules_json(), "<built-in default_rules.json>");
    for (const auto& r : d.rules_)
      if (!d.find_class(r.op_class)) throw std::logic_error("built-in rule names unknown class " + r.op_class);
    return d;
  }();
  return t;
}

RuleTable RuleTable::load_user(const std::string& path) {
  std::string text = read_file(path);
  RuleTable user = parse(text, path);
  bool replace = false;
  try {
    auto j = nlohmann::json::parse(text);
    if (auto it = j.find("replace_defaults"); it != j.end()) {
      if (!it->is_boolean()) fail(text, path, {std::string("replace_defaults")}, "must be true or false");
      replace = it->get<bool>();
    }
  } catch (const nlohmann::json::exception&) {
  }
  RuleTable out;
  if (!replace) out = defaults();
  // User classes: new ones are added, existing ids are overridden.
  for (const auto& c : user.classes_) {
    bool replaced = false;
    for (auto& oc : out.classes_)
      if (oc.id == c.id) { oc = c; replaced = true; }
    if (!replaced) out.classes_.push_back(c);
  }
  out.rules_.insert(out.rules_.begin(), user.rules_.begin(), user.rules_.end());
  for (std::size_t i = 0; i < user.rules_.size(); ++i)
    if (!out.find_class(user.rules_[i].op_class))
      fail(text, path, {std::string("rules"), i, std::string("class")},
           "unknown class '" + user.rules_[i].op_class + "' (declare it under 'classes')");
  return out;
}

const OpClass* RuleTable::classify(const std::string& kernel_name) const {
  for (const auto& r : rules_)
    if (r.matches(kernel_name)) return find_class(r.op_class);
  return nullptr;
}

const OpClass* RuleTable::find_class(const std::string& id) const {
  for (const auto& c : classes_)
    if (c.id == id) return &c;
  return nullptr;
}

}  // namespace arfit::trace
