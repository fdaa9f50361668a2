// arfit ingest FILES... [-o samples.csv] [--format F] [--collective C] [--nranks N] [--nnodes N] [--system NAME]
//              [--dtype T]
// Reads measurements in any supported format (detected per file), writes arfit's sample CSV (atomically,
// and only when every file read cleanly) and prints a summary: per file (format, rows, samples, failed,
// duplicates, warnings) and per group (points, size range).
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cli/cli_inputs.h"
#include "cli/commands.h"
#include "ingest/ingest.h"
#include "model/group_model.h"
#include "model/model_set.h"
#include "io/sample_csv_file.h"
#include "model/sample_csv.h"
#include "model/stated_network.h"
#include "model/text.h"

namespace arfit::cli {
namespace {

struct IngestArgs {
  std::vector<std::string> files;
  std::string output;
  std::string format = "auto";
  std::string collective;
  int nranks = 0;
  int nnodes = 0;
  std::string system;
  std::string network;
  std::string dtype;
  bool quiet = false;
};

// What tells apart samples of one file that are not the same series: the markdown section, the variant.
std::string label(const Sample& s) {
  std::string out;
  for (const char* k : {"section", "variant"}) {
    auto it = s.extra.find(k);
    if (it != s.extra.end() && !it->second.empty()) out += (out.empty() ? "" : "; ") + it->second;
  }
  return out;
}

// The points a model would be fitted to together: the summary's groups. The machine and the element type as
// fit names them (sample_system, canonical_dtype): the system column or the device before the source, so that a
// CSV of two devices without a system column is two groups here as in the models file, not one group of
// "duplicates"; bf16 and bfloat16 one type.
using GroupKey = std::tuple<std::string, std::string, std::string, std::string, int, int, bool, std::string>;
GroupKey group_key(const Sample& s) {
  return {sample_system(s), to_string(s.collective), s.strategy, to_string(s.fusion) + "/" + canonical_dtype(s.dtype),
          s.nranks, s.nnodes, s.in_place, label(s)};
}

// The reader options the command line gives; a bad value is a usage error naming its option.
ingest::Options ingest_options(const IngestArgs& a) {
  ingest::Options opt;
  opt.format = ingest_format_option(a.format);
  if (!a.collective.empty()) {
    try {
      opt.collective = parse_collective(a.collective);
    } catch (const std::invalid_argument& e) {
      throw UsageError(std::string("--collective: ") + e.what());
    }
  }
  // Both counts given: two options that cannot both hold (as predict and whatif say), not a row of a file.
  nodes_option(a.nnodes, a.nranks, "--nranks");
  if (a.nranks != 0) opt.nranks = a.nranks;  // 0: not given (the validator refuses an explicit 0)
  if (a.nnodes != 0) opt.nnodes = a.nnodes;
  if (!a.system.empty()) opt.system = a.system;
  if (!a.network.empty()) {
    const auto n = parse_stated_network(a.network);
    if (!n) throw UsageError("--network: '" + a.network + "' is not RAILSxBANDWIDTH (8x400Gb, 8x50GB/s)");
    opt.network = to_string(*n);
  }
  if (!a.dtype.empty()) opt.dtype = a.dtype;
  return opt;
}

// What every file together held: the samples in file order, the counts of the summary line and the inputs the
// output's header names.
struct IngestTotals {
  SampleFile out;
  std::size_t rows = 0, failed = 0, duplicates = 0, dropped = 0;
  std::string inputs;
};

// One file's line: format, rows, samples, failed, duplicates, dropped rows and the network it states.
void print_file_line(const std::string& file, const ingest::IngestResult& r, std::size_t dups) {
  std::cout << file << ": " << ingest::to_string(r.format) << ", " << r.rows << " rows, " << r.samples.size()
            << " samples, " << r.failed << " failed, " << dups << (dups == 1 ? " duplicate" : " duplicates");
  if (r.dropped) std::cout << ", " << r.dropped << " rows dropped";
  // The inter-node network the file states or --network gives: what the scale-out steps will carry to.
  for (const Sample& s : r.samples)
    if (const auto n = s.extra.find("network"); n != s.extra.end() && !n->second.empty()) {
      std::cout << ", network " << n->second;
      break;
    }
  std::cout << "\n";
  for (const auto& w : r.warnings) std::cerr << "arfit: warning: " << w << "\n";
}

// Reads every file (ingest::DistinctInputs refusing inputs that cannot be told apart), printing a line per file
// unless `quiet`.
IngestTotals ingest_files(const std::vector<std::string>& files, const ingest::Options& opt, bool quiet) {
  IngestTotals t;
  ingest::DistinctInputs distinct(opt);
  // Duplicates are counted over what is written, not as each reader counted them (a size repeated within one run
  // of a table, per row): --nranks, --nnodes and --system can merge tables of one file, or files, into one group
  // (a GPU-count sweep given --nranks 8), and a log holding the same run twice repeats every size. Each
  // duplicate is a sample whose group already has one at its size, in this file or an earlier one.
  // A size is its bytes and, for shaped samples, its shape: 128 x 4096 and 256 x 2048 are two points of a table.
  std::set<std::tuple<GroupKey, std::int64_t, std::int64_t, std::int64_t>> seen_sizes;
  for (const auto& f : files) {
    ingest::IngestResult r = ingest::ingest_file(f, opt);
    distinct.add(f, r);
    std::size_t dups = 0;
    for (const Sample& s : r.samples)
      if (!seen_sizes.insert({group_key(s), s.bytes, s.tokens, s.hidden}).second) ++dups;
    t.rows += r.rows;
    t.failed += r.failed;
    t.duplicates += dups;
    t.dropped += r.dropped;
    if (!quiet) print_file_line(f, r, dups);
    t.inputs += (t.inputs.empty() ? "" : " ") + f;
    for (auto& s : r.samples) t.out.samples.push_back(std::move(s));
  }
  return t;
}

// A summary group: its usable and failed points and the size range of the usable ones (-1: none).
struct GroupSummary {
  std::size_t ok = 0, failed = 0;
  std::int64_t lo = -1, hi = -1;
};

std::map<GroupKey, GroupSummary> summarise_groups(const std::vector<Sample>& samples) {
  std::map<GroupKey, GroupSummary> groups;
  for (const auto& s : samples) {
    GroupSummary& g = groups[group_key(s)];
    if (!s.ok()) {
      ++g.failed;
      continue;
    }
    ++g.ok;
    if (g.lo < 0 || s.bytes < g.lo) g.lo = s.bytes;
    if (s.bytes > g.hi) g.hi = s.bytes;
  }
  return groups;
}

// The per-group table: machine (with its label), collective, strategy, fusion/dtype, counts, place, points, sizes.
std::string groups_table(const std::map<GroupKey, GroupSummary>& groups) {
  std::vector<std::vector<std::string>> rows{
      {"system", "collective", "strategy", "fusion/dtype", "ranks", "nodes", "place", "points", "failed", "sizes"}};
  for (const auto& [k, g] : groups) {
    std::string sys = std::get<0>(k);
    if (!std::get<7>(k).empty()) sys += " [" + std::get<7>(k) + "]";
    rows.push_back({sys, std::get<1>(k), std::get<2>(k), std::get<3>(k), std::to_string(std::get<4>(k)),
                    std::to_string(std::get<5>(k)), std::get<6>(k) ? "in" : "out", std::to_string(g.ok),
                    std::to_string(g.failed), g.lo < 0 ? "-" : human_bytes(static_cast<double>(g.lo), 6) + " .. " + human_bytes(static_cast<double>(g.hi), 6)});
  }
  return aligned_columns(rows, {false, false, false, false, true, true, true, true, true, false}, "  ");
}

void run_ingest(const IngestArgs& a) {
  const ingest::Options opt = ingest_options(a);
  // Before the per-file lines: "-" takes standard output for the samples, and the summary goes to stderr.
  if (!a.output.empty()) check_output_file(a.output);
  IngestTotals t = ingest_files(a.files, opt, a.quiet);
  const std::map<GroupKey, GroupSummary> groups = summarise_groups(t.out.samples);
  std::cout << "summary: " << a.files.size() << " files, " << t.rows << " rows, " << t.out.samples.size() << " samples, "
            << t.failed << " failed, " << t.duplicates << (t.duplicates == 1 ? " duplicate, " : " duplicates, ")
            << (t.dropped ? std::to_string(t.dropped) + " rows dropped, " : std::string()) << groups.size() << " groups\n";
  if (!a.quiet) std::cout << groups_table(groups);
  if (!a.output.empty()) {
    t.out.meta.emplace_back("generator", "arfit ingest");
    t.out.meta.emplace_back("inputs", t.inputs);
    write_samples_csv(a.output, t.out);
    std::cout << "wrote " << t.out.samples.size() << " samples to " << a.output << "\n";
  }
}

void add_ingest(CLI::App& app) {
  auto args = std::make_shared<IngestArgs>();
  auto* cmd = app.add_subcommand(
      "ingest",
      "Convert measurements (nccl-tests text/JSON, PARAM COMMS-RES, TensorRT-LLM all-reduce CSV, aiconfigurator CSV, "
      "arfit CSV) into arfit's sample CSV and print a summary");
  cmd->add_option("files", args->files, "Input files (format detected per file)")->required()->check(input_file_validator());
  cmd->add_option("-o,--output", args->output,
                  "Write all samples to this arfit sample CSV (written only if every file reads cleanly; '-': standard "
                  "output, the summary then on stderr)");
  cmd->add_option("--format", args->format,
                  "Input format: auto, arfit, nccl-tests, nccl-tests-json, param, trtllm, aiconfigurator")
      ->capture_default_str();
  cmd->add_option("--collective", args->collective,
                  "Collective of every input, overriding what the files say (needed when a file does not say it): " +
                      known_collectives());
  cmd->add_option("--nranks", args->nranks,
                  "Rank count of every input, overriding what the files say (needed when a file does not say it)")
      ->check(CLI::Range(1, kMaxModelRanks));
  cmd->add_option("--nnodes", args->nnodes,
                  "Node count of every input, overriding what the files say (a multi-node log without per-rank "
                  "host lines reads as 1 node); at most each sample's rank count")
      ->check(CLI::Range(1, kMaxModelRanks));
  cmd->add_option("--system", args->system,
                  "Machine label of every input, overriding the file's (an aiconfigurator table's system= note, else "
                  "the file name): what crosshw, --prior transfers and scale-out steps tell machines apart by (crosshw "
                  "also takes nccl-tests logs of the same device on the same hosts for one machine)")
      ->check([](const std::string& v) { return v.empty() || v.find_first_of(",\n\r") != std::string::npos ? std::string("a label without commas or line breaks") : std::string(); });
  cmd->add_option("--network", args->network,
                  "Inter-node network of every input, over what a log's header states: RAILSxBANDWIDTH, the NICs a "
                  "node drives and one's bandwidth (8x400Gb, 8x400Gbps, 8x50GB/s; bits unless GB): across more nodes "
                  "than measured, other machines' scale-out steps are carried to this network's bandwidth");
  cmd->add_option("--dtype", args->dtype,
                  "Element type of inputs that do not state one (a framework benchmark's busbw table): bf16, fp16, "
                  "fp32, fp64, int8, fp8, ...; curves compare across machines only at one element size. A file "
                  "that states another type is bad input")
      ->check([](const std::string& v) { return dtype_size(v) > 0 ? std::string() : std::string("a known element type (bf16, fp16, fp32, fp64, int8, fp8, ...)"); });
  cmd->add_flag("-q,--quiet", args->quiet, "Print only the one-line summary (and, with -o, the line naming the file written)");
  cmd->callback([args] { run_ingest(*args); });
}

}  // namespace
}  // namespace arfit::cli

ARFIT_REGISTER_COMMAND(ingest, 10, arfit::cli::add_ingest);
