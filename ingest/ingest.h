// Readers for the measurements people already have. Every reader turns a file into arfit Samples;
// problems are InputError "file:line: what is wrong" and nothing is guessed silently.
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "model/sample.h"

namespace arfit::ingest {

enum class Format { Auto, ArfitCsv, NcclTests, NcclTestsJson, ParamComms, TrtllmCsv, Aiconfigurator };

std::string to_string(Format f);        // "arfit", "nccl-tests", "nccl-tests-json", "param", "trtllm", "aiconfigurator"
Format parse_format(const std::string&);  // inverse of to_string plus "auto"; throws std::invalid_argument

struct Options {
  Format format = Format::Auto;
  std::optional<Collective> collective;  // --collective: overrides/fills what the file does not say
  std::optional<int> nranks;             // --nranks
  // Applied after reading, to every sample of every format: what a log cannot say (a 2-node run whose log has
  // no per-rank host lines reads as 1 node; a file stem is not always the machine's name).
  std::optional<int> nnodes;             // --nnodes: at most every sample's rank count (else InputError)
  std::optional<std::string> system;     // --system: the machine label (extra "system") that crosshw,
                                         // transfers and scale-out steps compare
  std::optional<std::string> network;    // --network: the inter-node network (extra "network", canonical
                                         // RAILSxBANDWIDTH, model/stated_network.h), over what a log states
  std::optional<std::string> dtype;      // --dtype: the element type where a file does not state one (a
                                         // framework's busbw table); a stated other type is an InputError
};

struct IngestResult {
  Format format = Format::Auto;
  std::vector<Sample> samples;          // failed rows are included with status Failed and no timing
  std::vector<std::string> warnings;    // "file:line: ..." notes that are not errors (e.g. duplicated sizes)
  std::vector<std::pair<std::string, std::string>> meta;  // header facts (NCCL version, devices, command)
  std::size_t rows = 0;                 // data rows of the file's tables (one row may give several samples:
                                        // nccl-tests out-of-place + in-place, one per bandwidth column)
  std::size_t duplicates = 0;           // rows whose (series, size) the reader already read in the same run/table
                                        // (each warned); before --nranks/--nnodes/--system, which can merge tables:
                                        // `arfit ingest` counts its summary's duplicates over its output
  std::size_t failed = 0;               // samples with status Failed (N/A timing, #wrong > 0, zero bytes)
  std::size_t dropped = 0;              // rows shaped like data but not read (a negative size, or one beyond
                                        // int64); each is named in a warning, none is dropped silently
  // The file's column for a sample field it names otherwise ("time_us" -> "latency"): messages about a sample's
  // value name the column the user can find in the file.
  std::map<std::string, std::string> field_columns;
};

// Detects the format from the content (Options::format overrides) and parses. A file without data rows (a
// table header and nothing under it, or every row dropped) is an InputError naming the file.
IngestResult ingest_text(const std::string& text, const std::string& name, const Options& options = {});
IngestResult ingest_file(const std::string& path, const Options& options = {});

// The files of one command, told apart. Read alone, two inputs with the same file name in two folders
// (runs/h100/allreduce.txt, runs/a100/allreduce.txt) label their samples with the same machine (the file stem)
// and source, so `fit` averaged two machines into one curve, silently; a file given twice counted every point
// twice. add() throws InputError naming both files in either case. Labels a sample CSV carries itself are its
// own (arbench runs of one machine may share a source). With --system the caller has named the machine of every
// input itself (a log per GPU count of one machine): equal names are then meant.
class DistinctInputs {
 public:
  explicit DistinctInputs(const Options& options) : system_given_(options.system.has_value()) {}
  void add(const std::string& path, const IngestResult& result);

 private:
  bool system_given_;
  std::vector<std::string> paths_;
  std::map<std::pair<std::string, std::string>, std::string> owner_;  // (system label, source) -> file
};

// Concatenates the samples of several files (each detected on its own, kept apart by DistinctInputs). Throws
// InputError on the first bad file.
std::vector<Sample> load_samples(const std::vector<std::string>& paths, const Options& options = {});

// The format the content looks like (Format::Auto never returned: throws InputError when nothing matches).
Format detect_format(const std::string& text, const std::string& name);

// One reader, called directly (used by detect-less callers and the fuzz targets).
IngestResult ingest_as(Format format, const std::string& text, const std::string& name, const Options& options = {});

}  // namespace arfit::ingest
