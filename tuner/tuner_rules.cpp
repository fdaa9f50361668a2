#include "tuner/tuner_rules.h"

#include <sstream>

#include "model/errors.h"
#include "model/text.h"

namespace arfit::tuner {

namespace {

int index_of(const std::string& name, const std::vector<std::string>& names) {
  for (std::size_t i = 0; i < names.size(); ++i)
    if (lower(name) == names[i]) return static_cast<int>(i);
  return -1;
}

std::string trimmed(const std::string& s) {
  const auto a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

bool plain_decimal(const std::string& t, std::size_t max_digits) {
  return !t.empty() && t.size() <= max_digits && t.find_first_not_of("0123456789") == std::string::npos &&
         (t.size() == 1 || t[0] != '0');
}

// -1 ("any" or "NCCL's own") or a decimal count of at most 9 digits (no sign, no leading zero), else InputError.
int count_field(const std::string& text, const std::string& field, const std::string& path, long line) {
  if (text == "-1") return -1;
  if (!plain_decimal(text, 9)) throw InputError(path, line, field, "'" + text + "' is not -1 or a decimal count");
  return std::stoi(text);
}

std::uint64_t bytes_field(const std::string& text, const std::string& field, const std::string& path, long line) {
  if (!plain_decimal(text, 20)) throw InputError(path, line, field, "'" + text + "' is not a byte count (a decimal integer)");
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    throw InputError(path, line, field, "'" + text + "' is larger than 18446744073709551615");
  }
}

TunerRule rule_of(const std::vector<std::string>& f, const std::string& path, long line) {
  static const char* names[] = {"collective_type", "min_bytes", "max_bytes", "algorithm", "protocol",
                                "channels",        "nNodes",    "nRanks",    "numPipeOps", "regBuff"};
  TunerRule r;
  r.line = line;
  r.function = nccl_function_index(f[0]);
  if (r.function < 0)
    throw InputError(path, line, names[0], "'" + f[0] + "' is not one of broadcast, reduce, allgather, reducescatter, allreduce");
  r.min_bytes = bytes_field(f[1], names[1], path, line);
  r.max_bytes = bytes_field(f[2], names[2], path, line);
  if (r.min_bytes > r.max_bytes) throw InputError(path, line, names[2], "below min_bytes " + f[1]);
  r.algorithm = nccl_algorithm_index(f[3]);
  if (r.algorithm < 0)
    throw InputError(path, line, names[3], "'" + f[3] + "' is not one of tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat");
  r.protocol = nccl_protocol_index(f[4]);
  if (r.protocol < 0) throw InputError(path, line, names[4], "'" + f[4] + "' is not one of ll, ll128, simple");
  r.channels = count_field(f[5], names[5], path, line);
  r.nnodes = count_field(f[6], names[6], path, line);
  r.nranks = count_field(f[7], names[7], path, line);
  if (r.nnodes == 0) throw InputError(path, line, names[6], "0 nodes (give -1 for any)");
  if (r.nranks == 0) throw InputError(path, line, names[7], "0 ranks (give -1 for any)");
  if (f.size() > 8) r.pipe_ops = count_field(f[8], names[8], path, line);
  if (f.size() > 9) {
    r.reg_buff = count_field(f[9], names[9], path, line);
    if (r.reg_buff > 1) throw InputError(path, line, names[9], "'" + f[9] + "' is not -1, 0 or 1");
  }
  return r;
}

}  // namespace

int nccl_function_index(const std::string& c) {
  return index_of(c, {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"});
}
int nccl_algorithm_index(const std::string& a) {
  return index_of(a, {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"});
}
int nccl_protocol_index(const std::string& p) { return index_of(p, {"ll", "ll128", "simple"}); }

bool TunerRule::matches(int f, std::size_t bytes, std::size_t ranks, std::size_t nodes, int ops, int reg) const {
  return f == function && bytes >= min_bytes && bytes <= max_bytes && (nnodes < 0 || static_cast<std::size_t>(nnodes) == nodes) &&
         (nranks < 0 || static_cast<std::size_t>(nranks) == ranks) && (pipe_ops < 0 || pipe_ops == ops) &&
         (reg_buff < 0 || reg_buff == reg);
}

std::vector<TunerRule> read_tuner_rules(const std::string& text, const std::string& path) {
  std::vector<TunerRule> rules;
  std::istringstream in(text);
  std::string line;
  long n = 0;
  while (std::getline(in, line)) {
    ++n;
    const std::string t = trimmed(line);
    if (t.empty() || t[0] == '#') continue;
    std::vector<std::string> fields;
    for (const std::string& f : split_items(t, ',')) fields.push_back(trimmed(f));
    if (fields.size() < 8 || fields.size() > 10)
      throw InputError(path, n, "", std::to_string(fields.size()) + " fields; a rule has 8 to 10: collective_type,min_bytes,"
                                    "max_bytes,algorithm,protocol,channels,nNodes,nRanks[,numPipeOps[,regBuff]]");
    rules.push_back(rule_of(fields, path, n));
  }
  if (rules.empty()) throw InputError(path, 0, "", "no rule (every line is blank or a # comment)");
  return rules;
}

}  // namespace arfit::tuner
