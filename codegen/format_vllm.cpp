// --format vllm: vLLM's CUSTOM_ALL_REDUCE_MAX_SIZES (vllm/distributed/device_communicators/all_reduce_utils.py) under
// vLLM's rules (codegen/rules_vllm.h): per compute capability and world size, the bound below which vLLM runs its
// custom all-reduce. vLLM reads the table only while torch symmetric memory runs, caps it at 8 MiB and runs
// symmetric memory above it (bf16, up to SYMM_MEM_ALL_REDUCE_MAX_SIZES), NCCL beyond: the bound is chosen between
// the custom all-reduce and what runs above it, so it needs a model of symmetric memory. World sizes arfit does not
// decide keep vLLM's values (or --base's). The one-shot/two-shot switch (csrc/custom_all_reduce.cuh) is compiled
// in; it is written alongside, for information, when the models have one-shot and two-shot strategies.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <stdexcept>

#include "codegen/formats.h"
#include "codegen/python_dict.h"
#include "codegen/python_install.h"
#include "codegen/rules_vllm.h"
#include "codegen/safe_text.h"
#include "codegen/writers.h"
#include "model/errors.h"
#include "model/text.h"

namespace arfit::codegen {

std::string vllm_capability(int sm) { return std::to_string(sm / 10) + "." + std::to_string(sm % 10); }

std::uint64_t vllm_max_size(const ThresholdRow& row) {
  const auto cap = static_cast<std::uint64_t>(kVllmCustomMaxBytes), never = static_cast<std::uint64_t>(kVllmNeverCustomBytes);
  if (!row.imposed_boundary && row.split >= row.sizes.size() && !row.sizes.empty()) return cap;  // custom wherever vLLM lets it
  if (!row.imposed_boundary && row.split == 0) return never;
  // inp_size < bound for inp_size <= last_below; messages are multiples of 16 bytes, so rounding the bound up to
  // one keeps the same messages below it.
  const std::uint64_t bound = (row.last_below_bytes() + 1 + 15) / 16 * 16;
  return std::clamp(bound, never, cap);
}

namespace {

// vLLM's own tables: the --base file's, else vLLM 0.33.0's.
VllmSizes sizes_of(const PyDict& d, const std::string& path, const std::string& name) {
  VllmSizes out;
  if (!d.numbers.empty())
    throw InputError(path, d.line, name, "maps a capability to a number; vLLM's maps each to {world_size: bytes}");
  for (const auto& [cap, inner] : d.dicts) {
    if (!inner.dicts.empty()) throw InputError(path, inner.line, name, "capability " + cap + ": nested too deep");
    for (const auto& [ws, bytes] : inner.numbers) {
      if (ws.empty() || ws.size() > 7 || ws.find_first_not_of("0123456789") != std::string::npos)
        throw InputError(path, inner.line, name, "capability " + cap + ": key '" + ws + "' is not a world size");
      if (!(bytes >= 0)) throw InputError(path, inner.line, name, "capability " + cap + ", world size " + ws + ": negative size");
      out[cap][std::stoi(ws)] = bytes;
    }
  }
  return out;
}

struct OwnTables {
  VllmSizes custom, symm_mem;
  std::string whose;
};

OwnTables own_tables(const Request& r, const std::string& version) {
  if (r.base_path.empty()) return {vllm_default_custom_sizes(), vllm_default_symm_mem_sizes(), "vLLM " + version};
  return {sizes_of(read_python_dict(r.base_text, r.base_path, "CUSTOM_ALL_REDUCE_MAX_SIZES"), r.base_path, "CUSTOM_ALL_REDUCE_MAX_SIZES"),
          sizes_of(read_python_dict(r.base_text, r.base_path, "SYMM_MEM_ALL_REDUCE_MAX_SIZES"), r.base_path, "SYMM_MEM_ALL_REDUCE_MAX_SIZES"),
          r.base_path};
}

bool is_vllm_custom(const std::string& n) {
  return n.rfind("vllm", 0) == 0 && n.find("custom") != std::string::npos && n.find("eager") == std::string::npos;
}
// vLLM's SymmMemCommunicator copies the input into its symmetric buffer, runs torch's multimem_all_reduce_ (the
// two-shot multimem: ld_reduce of a slice, multimem.st to every rank) and copies out -- arbench's MULTIMEM_TWOSHOT --
// at the world sizes of _WORLD_SIZES_MULTIMEM, torch's unicast two_shot_all_reduce_ at the others; never the multimem
// one-shot, so MULTIMEM_ONESHOT's curve does not stand for it.
bool is_symm_mem(const std::string& n) {
  if (n.find("multimem_oneshot") != std::string::npos || n.find("multimem_one_shot") != std::string::npos) return false;
  return n.find("symm_mem") != std::string::npos || n.find("symmmem") != std::string::npos || n.find("multimem") != std::string::npos;
}

const std::vector<RoleSpec>& vllm_roles() {
  static const std::vector<RoleSpec> roles{
      {"custom", &is_vllm_custom, "vLLM's custom all-reduce: vllm*custom*, not eager (vLLM captures decode in CUDA graphs)"},
      {"nccl", &is_nccl_name, "NCCL"},
      {"symm_mem", &is_symm_mem, "torch symmetric memory: names holding symm_mem or multimem (MULTIMEM_TWOSHOT), not a multimem one-shot"},
      {"oneshot", &is_oneshot_name, "ONESHOT"},
      {"twoshot", &is_twoshot_name, "TWOSHOT"}};
  return roles;
}

// What vLLM runs above the custom bound at a size: symmetric memory for bf16 up to its maximum, NCCL beyond.
Predictor above_bound(Predictor roles, std::map<int, double> symm_max, bool bf16) {
  return [roles = std::move(roles), symm_max = std::move(symm_max), bf16](const PredictQuery& q) {
    PredictQuery m = q;
    const auto it = symm_max.find(q.nranks);
    m.strategy = bf16 && it != symm_max.end() && q.bytes <= it->second ? "symm_mem" : "nccl";
    return roles(m);
  };
}

std::string max_size_dict(const std::string& name, const std::string& capability, const std::vector<VllmEntry>& entries) {
  std::string s = name + " = {\n    " + python_string(capability) + ": {\n";
  for (const auto& e : entries)
    s += "        " + std::to_string(e.world_size) + ": " + std::to_string(e.bytes) + ",  # " +
         comment_text(e.comment, CommentSyntax::Hash) + "\n";
  return s + "    },\n}\n";
}

std::string oneshot_dict(const std::string& capability, const std::vector<ThresholdRow>& rows) {
  return "ONESHOT_MAX_SIZES = {\n    " + python_string(capability) + ": " +
         python_tp_dict(rows, "    ", [](const ThresholdRow& r) { return std::to_string(r.split == 0 ? 0 : r.last_below_bytes() + 1); },
                        [](const ThresholdRow& r) {
                          return r.split == 0 ? std::string("never one-shot") : "one-shot up to " + human_bytes(double(r.last_below_bytes()));
                        }) +
         ",\n}\n";
}

}  // namespace

std::string write_vllm(const VllmConfig& c, const Banner& banner) {
  std::ostringstream s;
  s << banner_text(banner, "# ", "vLLM custom all-reduce sizes for compute capability " + c.capability + ", chosen from fitted models.");
  s << python_roles_comment(c.roles) << "#\n";
  s << "# vLLM runs its custom all-reduce while inp_size < CUSTOM_ALL_REDUCE_MAX_SIZES[capability][world_size] (bytes).\n";
  for (const auto& note : vllm_engine_notes(vllm_version_range().back(), c.capability)) s << comment_lines(note, "# ", 118);
  s << "# Install: install() in every vLLM process before it builds its communicators (the vllm.general_plugins entry\n"
       "# point of arfit's Python package does; it checks the vLLM version first), or merge the entries into\n"
       "# vllm/distributed/device_communicators/all_reduce_utils.py.\n";
  s << python_disagreement_comments(c.custom_vs_above, "size threshold");
  s << python_release_guard("vllm", vllm_version_range()) << "\n\n";
  s << max_size_dict("CUSTOM_ALL_REDUCE_MAX_SIZES", c.capability, c.entries) << "\n";
  s << "# The one-shot/two-shot switch: one-stage kernel while the message is below this size (bytes), two-stage from\n"
       "# there up. vLLM compiles its switch into csrc/custom_all_reduce.cuh (REDUCE_CASE: 2 GPUs always one-stage, up to\n"
       "# 4 below 512 KiB, up to 8 below 256 KiB); these sizes are for information: install() does not touch it.\n";
  if (c.oneshot_vs_twoshot.empty()) {
    s << "# Not modelled: the models have no one-shot and two-shot strategies (ONESHOT, TWOSHOT or --map).\n";
    s << "ONESHOT_MAX_SIZES = None\n";
  } else {
    s << python_disagreement_comments(c.oneshot_vs_twoshot, "size switch");
    s << oneshot_dict(c.capability, c.oneshot_vs_twoshot);
  }
  s << R"PY(

def install():
    """Merge CUSTOM_ALL_REDUCE_MAX_SIZES into vLLM's table, in place (custom_all_reduce.py reads the dict object it
    imported), after checking that the running vLLM is one this file was written for. Idempotent."""
    import vllm

    check_version(getattr(vllm, "__version__", "unknown"))
    from vllm.distributed.device_communicators import all_reduce_utils

    table = getattr(all_reduce_utils, "CUSTOM_ALL_REDUCE_MAX_SIZES", None)
    symm_mem = getattr(all_reduce_utils, "SYMM_MEM_ALL_REDUCE_MAX_SIZES", None)
    if not isinstance(table, dict) or not isinstance(symm_mem, dict):
        raise RuntimeError("arfit: vllm.distributed.device_communicators.all_reduce_utils has no "
                           "CUSTOM_ALL_REDUCE_MAX_SIZES and SYMM_MEM_ALL_REDUCE_MAX_SIZES dicts")
    for capability in CUSTOM_ALL_REDUCE_MAX_SIZES:
        # vLLM reads the custom table only where torch symmetric memory starts: capabilities of its own table.
        if capability not in symm_mem:
            raise RuntimeError("arfit: vLLM %s runs no symmetric memory on compute capability %s (not in "
                               "SYMM_MEM_ALL_REDUCE_MAX_SIZES), so it never reads CUSTOM_ALL_REDUCE_MAX_SIZES there"
                               % (vllm.__version__, capability))
    for capability, sizes in CUSTOM_ALL_REDUCE_MAX_SIZES.items():
        table.setdefault(capability, {}).update(sizes)
)PY";
  return s.str();
}

namespace {

void require_vllm_world_sizes(const std::vector<int>& tps) {
  const auto& known = vllm_world_sizes();
  for (int tp : tps)
    if (std::find(known.begin(), known.end(), tp) == known.end())
      throw std::invalid_argument("--tp: vLLM's custom all-reduce runs 2, 4, 6 or 8 GPUs, not " + std::to_string(tp));
}

// vLLM reads the table only where torch symmetric memory starts: capabilities of SYMM_MEM_ALL_REDUCE_MAX_SIZES.
void require_symm_mem_capability(const OwnTables& own, const std::string& cap, int sm) {
  if (own.symm_mem.count(cap)) return;
  std::vector<std::string> caps;
  for (const auto& [k, v] : own.symm_mem) caps.push_back(k);
  throw std::invalid_argument("--sm " + std::to_string(sm) + ": vLLM reads CUSTOM_ALL_REDUCE_MAX_SIZES only while torch "
                              "symmetric memory runs, which it starts for capabilities " + join(caps, ", ") + " (" + own.whose +
                              "), not " + cap + ": there its custom all-reduce runs below 8 MiB whatever the table says");
}

void require_symm_mem_model(const StrategySources& roles, const OwnTables& own, const std::string& cap) {
  if (roles.count("symm_mem")) return;
  std::vector<std::string> bands;
  for (const auto& [ws, bytes] : own.symm_mem.at(cap)) bands.push_back(std::to_string(ws) + " GPUs " + human_bytes(bytes));
  throw std::invalid_argument("--map: vLLM reads CUSTOM_ALL_REDUCE_MAX_SIZES only while torch symmetric memory runs, and "
                              "above the bound it runs symmetric memory (bf16, up to " + join(bands, ", ") + " on " + cap +
                              "), not NCCL: the bound compares its custom all-reduce with symmetric memory, and the models "
                              "hold no symmetric-memory strategy (names with symm_mem or multimem). Measure vLLM's "
                              "symmetric-memory all-reduce, or name the strategy that stands for it: --map NAME=symm_mem");
}

VllmEntry decided_entry(const ThresholdRow& row, const OwnTables& own, const std::string& cap) {
  const std::uint64_t bound = vllm_max_size(row);
  std::string what = bound <= kVllmNeverCustomBytes ? "never custom" : "custom below " + human_bytes(double(bound));
  if (bound >= kVllmCustomMaxBytes) what += " (vLLM's 8 MiB cap)";
  const auto symm = own.symm_mem.at(cap).find(row.tp);
  const std::string above = symm == own.symm_mem.at(cap).end()
                                ? "NCCL"
                                : "symmetric memory up to " + human_bytes(symm->second) + ", NCCL beyond";
  const std::string note = row.extrapolation_note();
  return {row.tp, bound, "arfit: " + what + "; above it " + above + (note.empty() ? "" : "; " + note)};
}

VllmEntry kept_entry(int ws, const OwnTables& own, const std::string& cap) {
  const auto c = own.custom.find(cap);
  if (c == own.custom.end() || !c->second.count(ws))
    return {ws, static_cast<std::uint64_t>(kVllmCustomMaxBytes),
            "not decided by arfit; " + own.whose + " has no entry (its bound is then 8 MiB, and before 0.33.0 a missing "
            "world size raises KeyError)"};
  return {ws, static_cast<std::uint64_t>(std::llround(c->second.at(ws))), "not decided by arfit: " + own.whose + "'s value"};
}

FormatOutput generate_vllm(const FormatInput& in) {
  const Request& r = in.request;
  const auto& specs = vllm_roles();
  const std::string version = vllm_version(r.consumer_version);
  const EnginePlanner p = engine_planner(in, "vllm", specs);
  require_role(p.roles, specs[0], "vllm");
  require_role(p.roles, specs[1], "vllm");
  require_vllm_world_sizes(p.tps);
  const OwnTables own = own_tables(r, version);
  VllmConfig c;
  c.sm = r.sm;
  c.capability = vllm_capability(r.sm);
  c.roles = p.roles;
  require_symm_mem_capability(own, c.capability, r.sm);
  require_symm_mem_model(p.roles, own, c.capability);
  // Sizes below vLLM's 8 MiB cap: from it up the custom all-reduce never runs.
  std::vector<double> sizes;
  for (double b : p.sizes)
    if (b < kVllmCustomMaxBytes) sizes.push_back(b);
  if (sizes.empty()) throw std::invalid_argument("--bytes: no size below 8 MiB, vLLM's cap on its custom all-reduce");
  const Predictor above = above_bound(p.predict, own.symm_mem.at(c.capability), lower(r.dtype) == "bf16");
  c.custom_vs_above = plan_thresholds(p.tps, sizes, "custom", "above", [&](const PredictQuery& q) {
    return q.strategy == "above" ? above(q) : p.predict(q);
  }, p.base);
  if (c.custom_vs_above.empty())
    throw std::invalid_argument("--tp: no TP size has models of both the custom all-reduce and what vLLM runs above it");
  for (int ws : vllm_world_sizes()) {
    const auto row = std::find_if(c.custom_vs_above.begin(), c.custom_vs_above.end(), [&](const ThresholdRow& x) { return x.tp == ws; });
    c.entries.push_back(row != c.custom_vs_above.end() ? decided_entry(*row, own, c.capability) : kept_entry(ws, own, c.capability));
  }
  if (p.has("oneshot") && p.has("twoshot")) c.oneshot_vs_twoshot = p.plan("oneshot", "twoshot");
  std::ostringstream s;
  s << c.custom_vs_above.size() << " of " << c.entries.size() << " world sizes decided by arfit for capability " << c.capability
    << " (the others: " << own.whose << "'s values), vLLM 0.10.2 to " << vllm_version_range().back();
  for (const auto& l : describe_disagreements(c.custom_vs_above, "size threshold")) s << "; " << l;
  for (const auto& l : describe_extrapolations(c.custom_vs_above)) s << "; " << l;
  return {write_vllm(c, in.banner), s.str()};
}

}  // namespace

FormatSpec vllm_format() {
  return {"vllm", "vLLM CUSTOM_ALL_REDUCE_MAX_SIZES (custom all-reduce vs what runs above it) and the one-/two-shot switch size",
          &generate_vllm};
}

}  // namespace arfit::codegen
