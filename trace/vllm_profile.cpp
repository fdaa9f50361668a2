#include "trace/vllm_profile.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <nlohmann/json.hpp>

#include "io/input_file.h"
#include "model/checked.h"
#include "model/errors.h"
#include "model/json_input.h"
#include "trace/json_locate.h"

namespace arfit::trace {

std::string to_string(PhaseKind k) {
  switch (k) {
    case PhaseKind::Prefill: return "prefill";
    case PhaseKind::Decode: return "decode";
    case PhaseKind::Other: return "other";
  }
  return "other";
}

namespace {

using nlohmann::json;

struct Reader {
  const std::string& text;
  const std::string& name;

  [[noreturn]] void fail(const JsonPath& path, const std::string& what) const {
    throw InputError(name, json_line_of(text, path), "", "at " + format_json_path(path) + ": " + what);
  }

  static std::string type_name(const json& j) { return j.type_name(); }

  double number(const json& obj, const JsonPath& obj_path, const std::string& key, bool required, double dflt) const {
    JsonPath p = obj_path;
    p.emplace_back(key);
    auto it = obj.find(key);
    if (it == obj.end()) {
      if (required) fail(obj_path, "missing field '" + key + "'");
      return dflt;
    }
    if (!it->is_number()) fail(p, "'" + key + "' must be a number, got " + type_name(*it) + " " + it->dump());
    double v = it->get<double>();
    if (!std::isfinite(v)) fail(p, "'" + key + "' is not finite");
    return v;
  }

  // A number in [0, max] (`unit` names it in the message); absent: 0.
  double in_range(const json& obj, const JsonPath& obj_path, const std::string& key, bool required, double max,
                  const std::string& unit) const {
    const double v = number(obj, obj_path, key, required, 0);
    if (v < 0 || v > max) {
      JsonPath p = obj_path;
      p.emplace_back(key);
      if (v < 0) fail(p, "'" + key + "' is negative");
      std::ostringstream os;
      os << "'" << key << "' = " << obj.at(key).dump() << " is beyond " << max << " " << unit;
      fail(p, os.str());
    }
    return v;
  }

  std::int64_t integer(const json& obj, const JsonPath& obj_path, const std::string& key) const {
    const double v = number(obj, obj_path, key, false, 0);
    const auto n = checked_narrow<std::int64_t>(v);
    if (v < 0 || !n) {
      JsonPath p = obj_path;
      p.emplace_back(key);
      fail(p, "'" + key + "' must be a non-negative integer (at most 2^63 - 1), got " + obj.at(key).dump());
    }
    return *n;
  }

  void read_context(const json& ctx, ProfileContext& out) const {
    JsonPath path{std::string("context")};
    if (!ctx.is_object()) fail(path, "'context' must be an object, got " + type_name(ctx));
    const json* ea = nullptr;
    auto e = ctx.find("engine_args");
    if (e != ctx.end() && e->is_object()) ea = &*e;
    auto pick = [&](const std::string& key, JsonPath& where) -> const json* {
      auto it = ctx.find(key);
      if (it != ctx.end()) { where = {std::string("context"), key}; return &*it; }
      if (ea) {
        auto jt = ea->find(key);
        if (jt != ea->end()) { where = {std::string("context"), std::string("engine_args"), key}; return &*jt; }
      }
      return nullptr;
    };
    JsonPath where;
    if (const json* m = pick("model", where)) {
      if (!m->is_string()) fail(where, "'model' must be a string, got " + type_name(*m));
      out.model = m->get<std::string>();
    }
    auto int_field = [&](const std::string& key) -> std::int64_t {
      JsonPath w;
      const json* v = pick(key, w);
      if (!v || v->is_null()) return 0;
      if (!v->is_number()) fail(w, "'" + key + "' must be a number, got " + type_name(*v) + " " + v->dump());
      const double d = v->get<double>();
      const auto n = checked_narrow<std::int32_t>(d);
      if (d < 0 || !n) fail(w, "'" + key + "' must be a non-negative integer (at most 2^31 - 1), got " + v->dump());
      return *n;
    };
    out.batch_size = int_field("batch_size");
    out.prompt_len = int_field("prompt_len");
    out.output_len = int_field("output_len");
    out.tensor_parallel_size = int_field("tensor_parallel_size");
  }

  struct Ancestor {
    const ProfileNode* node;
    std::size_t nchildren;  // declared child count
  };

  static std::size_t child_count(const json& j) {
    auto c = j.find("children");
    return (c != j.end() && c->is_array()) ? c->size() : 0;
  }

  ProfileNode read_node(const json& j, const JsonPath& path, std::vector<Ancestor>& ancestors) const {
    if (static_cast<int>(ancestors.size()) >= kMaxProfileDepth)
      fail(path, "nesting deeper than " + std::to_string(kMaxProfileDepth) + " levels (cyclic tree?)");
    if (!j.is_object()) fail(path, "a node must be an object with 'entry' and 'children', got " + type_name(j));
    auto e = j.find("entry");
    if (e == j.end()) fail(path, "missing field 'entry'");
    JsonPath epath = path;
    epath.emplace_back(std::string("entry"));
    if (!e->is_object()) fail(epath, "'entry' must be an object, got " + type_name(*e));
    ProfileNode n;
    auto nm = e->find("name");
    if (nm == e->end()) fail(epath, "missing field 'name'");
    if (!nm->is_string()) {
      JsonPath p = epath;
      p.emplace_back(std::string("name"));
      fail(p, "'name' must be a string, got " + type_name(*nm));
    }
    n.name = nm->get<std::string>();
    n.cuda_time_us = in_range(*e, epath, "cuda_time_us", true, kMaxProfileTimeUs, std::string("us (") + kMaxProfileTimeText + ")");
    n.pct_cuda_time = number(*e, epath, "pct_cuda_time", false, 0);
    n.invocations = integer(*e, epath, "invocations");
    n.bytes = in_range(*e, epath, "bytes", false, kMaxProfileMessageBytes, "bytes");
    if (auto s = e->find("shape"); s != e->end()) {
      JsonPath p = epath;
      p.emplace_back(std::string("shape"));
      if (!s->is_array() || s->size() != 2 || !(*s)[0].is_number_integer() || !(*s)[1].is_number_integer() ||
          (*s)[0].get<std::int64_t>() <= 0 || (*s)[1].get<std::int64_t>() <= 0)
        fail(p, "'shape' must be [tokens, hidden] with positive integers, got " + s->dump());
      n.shape_tokens = (*s)[0].get<std::int64_t>();
      n.shape_hidden = (*s)[1].get<std::int64_t>();
    }
    if (auto d = e->find("dtype"); d != e->end()) {
      if (!d->is_string()) {
        JsonPath p = epath;
        p.emplace_back(std::string("dtype"));
        fail(p, "'dtype' must be a string, got " + type_name(*d));
      }
      n.dtype = d->get<std::string>();
    }
    n.where = name + ": " + format_json_path(path);

    // A node equal to one of its ancestors (same name, time, invocations and child count) can only come
    // from a self-containing structure written out: report it rather than double counting.
    for (const Ancestor& a : ancestors) {
      if (a.node->name == n.name && a.node->cuda_time_us == n.cuda_time_us && a.node->invocations == n.invocations &&
          a.nchildren == child_count(j))
        fail(path, "node '" + n.name + "' repeats its ancestor (" + a.node->where + "): cyclic tree");
    }

    auto c = j.find("children");
    if (c != j.end() && !c->is_null()) {
      JsonPath cpath = path;
      cpath.emplace_back(std::string("children"));
      if (!c->is_array()) fail(cpath, "'children' must be an array, got " + type_name(*c));
      n.children.reserve(c->size());
      ancestors.push_back({&n, c->size()});
      for (std::size_t i = 0; i < c->size(); ++i) {
        JsonPath p = cpath;
        p.emplace_back(i);
        n.children.push_back(read_node((*c)[i], p, ancestors));
      }
      ancestors.pop_back();
    }
    return n;
  }

  Phase read_step(const json& step, const std::string& key) const {
    JsonPath path{key};
    if (!step.is_object()) fail(path, "a step must be an object with 'summary_stats', got " + type_name(step));
    auto s = step.find("summary_stats");
    if (s == step.end()) fail(path, "step '" + key + "' has no 'summary_stats'");
    JsonPath spath{key, std::string("summary_stats")};
    if (!s->is_array()) fail(spath, "'summary_stats' must be an array of nodes, got " + type_name(*s));
    Phase ph;
    ph.name = key;
    std::vector<Ancestor> ancestors;
    for (std::size_t i = 0; i < s->size(); ++i) {
      JsonPath p = spath;
      p.emplace_back(i);
      ph.roots.push_back(read_node((*s)[i], p, ancestors));
    }
    return ph;
  }
};

}  // namespace

Profile parse_vllm_profile(const std::string& text, const std::string& name) {
  // The shared loading path: bounded nesting, errors naming file:line (model/json_input.h).
  const json root = parse_json(text, name);
  Reader r{text, name};
  if (!root.is_object()) throw InputError(name, 1, "", "a vLLM layerwise profile must be a JSON object, got " + std::string(root.type_name()));
  Profile prof;
  prof.source = name;
  prof.format = "vllm-layerwise";
  auto ctx = root.find("context");
  if (ctx == root.end())
    throw InputError(name, 1, "", "missing top-level 'context' object (is this a vLLM layerwise profile written with --json?)");
  r.read_context(*ctx, prof.context);

  auto pre = root.find("prefill");
  if (pre == root.end())
    throw InputError(name, 1, "", "no prefill step: expected a top-level key 'prefill' next to 'context'");
  Phase prefill = r.read_step(*pre, "prefill");
  prefill.kind = PhaseKind::Prefill;
  prefill.tokens = prof.context.batch_size * prof.context.prompt_len;
  prof.phases.push_back(std::move(prefill));

  // Step keys "decode_N", N of 1 to 9 digits (read without std::regex: a key of 40,000 digits overflowed its
  // recursive matcher's stack; longer numbers are not step keys).
  auto decode_step = [](const std::string& key) -> int {
    const std::string prefix = "decode_";
    if (key.size() <= prefix.size() || key.size() > prefix.size() + 9 || key.compare(0, prefix.size(), prefix) != 0) return -1;
    int step = 0;
    for (std::size_t i = prefix.size(); i < key.size(); ++i) {
      if (key[i] < '0' || key[i] > '9') return -1;
      step = step * 10 + (key[i] - '0');
    }
    return step;
  };
  std::vector<Phase> decodes;
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string& key = it.key();
    int step = decode_step(key);
    if (step < 0) continue;
    Phase d = r.read_step(it.value(), key);
    d.kind = PhaseKind::Decode;
    d.step = step;
    d.tokens = prof.context.batch_size;
    decodes.push_back(std::move(d));
  }
  std::sort(decodes.begin(), decodes.end(), [](const Phase& a, const Phase& b) { return a.step < b.step; });
  for (auto& d : decodes) prof.phases.push_back(std::move(d));
  return prof;
}

Profile read_vllm_profile(const std::string& path) { return parse_vllm_profile(read_file(path), path); }

bool looks_like_vllm_profile(const std::string& text) {
  auto p = text.find_first_not_of(" \t\r\n");
  if (p == std::string::npos || text[p] != '{') return false;
  return text.find("\"context\"") != std::string::npos || text.find("\"summary_stats\"") != std::string::npos ||
         text.find("\"prefill\"") != std::string::npos;
}

}  // namespace arfit::trace
