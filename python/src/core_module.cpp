// arfit._core: the C++ libraries as the Python package calls them. Every answer is computed by the same library
// call the command line makes (model/predict_answer.h, codegen::generate, fit::fit_model_set, the eval protocols),
// so that the package and `arfit` agree to the bit; this file only converts arguments and results. Loops over
// points run here, in C++ (the Python side hands whole numpy arrays over).
#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>
#include <nanobind/stl/map.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/pair.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/tuple.h>
#include <nanobind/stl/vector.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "codegen/codegen.h"
#include "codegen/formats.h"
#include "codegen/request.h"
#include "codegen/select_eval.h"
#include "fit/eval.h"
#include "fit/eval_alltoallv.h"
#include "fit/fit.h"
#include "fit/prior_check.h"
#include "fit/transfer.h"
#include "ingest/ingest.h"
#include "model/alltoallv.h"
#include "io/input_file.h"
#include "io/output_path_rule.h"
#include "io/atomic_output.h"
#include "model/errors.h"
#include "model/json_input.h"
#include "model/model_set.h"
#include "model/predict_answer.h"
#include "io/sample_csv_file.h"
#include "model/sample_csv.h"
#include "model/text.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace arfit::python {
namespace {

// The package's exception classes (arfit/_errors.py): a usage error is what `arfit` exits 2 for (an option or
// argument the caller should correct), a data error what it exits 1 for (bad input, a failed run).
PyObject* g_error = nullptr;
PyObject* g_usage_error = nullptr;
PyObject* g_data_error = nullptr;

// A models file with the text it was read from (codegen's banner hashes the text) and the name it was read as.
struct Models {
  ModelSet set;
  std::string text, path;
};

Models load_models(const std::string& path) {
  Models m;
  m.text = read_file(path);
  m.set = ModelSet::parse(m.text, path);
  m.path = path;
  return m;
}

Models parse_models(const std::string& text, const std::string& name) { return Models{ModelSet::parse(text, name), text, name}; }

std::string models_json(const Models& m) { return json_document_text(m.set.to_json()); }

ingest::Options ingest_options(const std::string& format) {
  ingest::Options o;
  o.format = ingest::parse_format(format);
  return o;
}

// Samples of files (any format `arfit ingest` reads) or of sample-CSV texts (a DataFrame written out), together.
std::vector<Sample> gather_samples(const std::vector<std::string>& paths, const std::vector<std::pair<std::string, std::string>>& texts,
                                   const std::string& format) {
  std::vector<Sample> all = paths.empty() ? std::vector<Sample>{} : ingest::load_samples(paths, ingest_options(format));
  for (const auto& [name, text] : texts)
    for (Sample& s : parse_samples_csv(text, name).samples) all.push_back(std::move(s));
  return all;
}

// The sample CSV `arfit ingest -o` would write for these files (its columns are the DataFrame's).
std::string samples_csv_text(const std::vector<std::string>& paths, const std::string& format) {
  SampleFile file;
  file.samples = ingest::load_samples(paths, ingest_options(format));
  return format_samples_csv(file);
}

// A DataFrame's CSV, read by the sample CSV reader (every check of a file) and written as arfit writes it.
void write_samples_text(const std::string& text, const std::string& name, const std::string& path) {
  const SampleFile file = parse_samples_csv(text, name);
  check_output_file(path);
  write_samples_csv(path, file);
}

// What an answer of the package rests on, as `arfit fit` and `arfit predict` hold it (fit/prior_check.h), its paths
// kept where they name files: a set fitted here is named "<fitted>" whatever it was fitted from (a DataFrame "<frame
// N>"), and two such names are not one file; its text's fingerprint tells it apart.
fit::OwnMeasurements with_file_paths_only(fit::OwnMeasurements own) {
  std::vector<std::pair<std::string, std::string>> files;
  for (auto& named : own.named)
    if (std::error_code ec; std::filesystem::is_regular_file(named.first, ec)) files.push_back(std::move(named));
  own.named = std::move(files);
  return own;
}

// The fingerprint of the models `m` as read (input_fingerprint: of the file's bytes), or of its text where no file was
// read (a fitted set).
std::string fingerprint_of(const Models& m) {
  const std::string read = input_fingerprint(m.path);
  return read.empty() ? fnv1a64_hex(m.text) : read;
}

// A prior given to fit(priors=...) or Models.predict(priors=...) holding `own`'s measurements is refused as `--prior`
// refuses it: a UsageError.
void refuse_own_measurements(const Models& prior, const fit::OwnMeasurements& own) {
  try {
    fit::refuse_own_file_as_prior({prior.path, fingerprint_of(prior)}, own);
    fit::refuse_own_models_as_prior(prior.path, prior.set, own);
  } catch (const fit::PriorOfOwnMeasurements& e) {
    throw std::invalid_argument(std::string("priors: ") + e.what());
  }
}

Models fit_models(const std::vector<std::string>& paths, const std::vector<std::pair<std::string, std::string>>& texts,
                  const std::string& format, const std::vector<const Models*>& priors, const std::string& family, int threads,
                  int min_points, bool correction, bool joint, bool pool) {
  if (threads < 1) throw std::invalid_argument("threads must be at least 1");
  if (min_points < 2) throw std::invalid_argument("min_points must be at least 2");
  fit::FitOptions fo;
  fo.family = family;
  fo.threads = threads;
  fo.min_points = min_points;
  fo.residual_correction = correction;
  fo.joint_n = joint;
  fo.pool_siblings = pool;
  const std::vector<Sample> samples = gather_samples(paths, texts, format);
  std::vector<std::string> prior_names;
  if (!priors.empty()) {
    std::vector<fit::MeasurementFile> own_files;
    for (const auto& p : paths) own_files.push_back({p, input_fingerprint(p)});
    for (const auto& t : texts) own_files.push_back({t.first, fnv1a64_hex(t.second)});
    const fit::OwnMeasurements own = with_file_paths_only(fit::own_measurements_of_fit(own_files, samples));
    for (const Models* p : priors) refuse_own_measurements(*p, own);
    std::vector<ModelSet> sets;
    for (const Models* p : priors) sets.push_back(p->set), prior_names.push_back(p->path);
    fo.prior = std::make_shared<fit::TransferLibrary>(sets);
    if (fo.prior->sources().empty()) throw std::runtime_error("priors: no fitted group in " + std::to_string(priors.size()) + " models");
  }
  std::vector<std::string> inputs = paths;
  for (const auto& t : texts) inputs.push_back(t.first);
  const ModelSet set = fit::fit_model_set(samples, fo, inputs, prior_names);
  return parse_models(json_document_text(set.to_json()), "<fitted>");
}

using DoubleArray = nb::ndarray<const double, nb::ndim<1>, nb::c_contig, nb::device::cpu>;
using IntArray = nb::ndarray<const std::int64_t, nb::ndim<1>, nb::c_contig, nb::device::cpu>;

template <class T>
nb::ndarray<nb::numpy, T, nb::ndim<1>> numpy_of(std::vector<T>&& v) {
  auto* owned = new std::vector<T>(std::move(v));
  nb::capsule free_when_done(owned, [](void* p) noexcept { delete static_cast<std::vector<T>*>(p); });
  return nb::ndarray<nb::numpy, T, nb::ndim<1>>(owned->data(), {owned->size()}, free_when_done);
}

// Predictions for n points: per point a size (bytes, or tokens x hidden, or a split), a GPU and node count and an SM;
// the request's other fields shared. The request is resolved once per distinct (GPU count, node count, SM), as
// `arfit predict` resolves its one; the answers are model/predict_answer.h's.
nb::dict predict_points(const Models& m, const std::vector<const Models*>& lenders_in, PredictRequest request,
                        const std::optional<DoubleArray>& bytes, const std::optional<IntArray>& tokens,
                        const std::optional<IntArray>& hidden, const IntArray& nranks, const IntArray& nnodes,
                        const IntArray& sms, const std::vector<std::string>& splits) {
  const std::size_t n = nranks.shape(0);
  std::vector<ModelSet> lenders;
  if (!lenders_in.empty()) {
    const fit::OwnMeasurements own = with_file_paths_only(fit::own_measurements_of_models({m.path, fingerprint_of(m)}, m.set));
    for (const Models* l : lenders_in) refuse_own_measurements(*l, own);
  }
  for (const Models* l : lenders_in) lenders.push_back(l->set);
  request.shaped = tokens.has_value();
  request.first_split = splits.empty() ? std::string() : splits.front();
  std::vector<double> out_bytes(n, NAN), time(n, NAN), lo(n, NAN), hi(n, NAN), busbw(n, NAN);
  std::vector<bool> extrapolated(n, false), transferred(n, false);
  std::vector<std::string> how(n), error(n);
  std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, ResolvedPredict> resolved;
  {
    nb::gil_scoped_release unlocked;  // the models are immutable and predict is const: other Python threads may run
    for (std::size_t i = 0; i < n; ++i) {
      const auto key = std::make_tuple(nranks(i), nnodes(i), sms(i));
      auto it = resolved.find(key);
      if (it == resolved.end()) {
        PredictRequest r = request;
        r.nranks = static_cast<int>(std::get<0>(key));
        r.nnodes = static_cast<int>(std::get<1>(key));
        r.sm = static_cast<int>(std::get<2>(key));
        it = resolved.emplace(key, resolve_predict_request(m.set, r)).first;
      }
      PredictQuery q = it->second.base;
      int busbw_nranks = it->second.busbw_nranks;
      if (bytes) q.bytes = (*bytes)(i);
      if (tokens) q.tokens = (*tokens)(i), q.hidden = (*hidden)(i);
      if (!splits.empty()) {
        q.splits = splits[i];
        busbw_nranks = static_cast<int>(parse_alltoallv_split(q.splits).nranks());
      }
      const PredictAnswer a = answer_predict_query(m.set, lenders, q, busbw_nranks);
      if (!a.prediction) {
        error[i] = a.error;
        continue;
      }
      out_bytes[i] = a.prediction->bytes, time[i] = a.prediction->time_us;
      lo[i] = a.prediction->lo_us, hi[i] = a.prediction->hi_us, busbw[i] = a.busbw_gbps;
      extrapolated[i] = a.prediction->extrapolated, transferred[i] = a.prediction->transferred;
      how[i] = a.prediction->how;
    }
  }
  std::vector<std::uint8_t> ex(extrapolated.begin(), extrapolated.end()), tr(transferred.begin(), transferred.end());
  nb::dict d;
  d["bytes"] = numpy_of(std::move(out_bytes));
  d["time_us"] = numpy_of(std::move(time));
  d["lo_us"] = numpy_of(std::move(lo));
  d["hi_us"] = numpy_of(std::move(hi));
  d["busbw_gbps"] = numpy_of(std::move(busbw));
  d["extrapolated"] = numpy_of(std::move(ex));
  d["transferred"] = numpy_of(std::move(tr));
  d["how"] = how;
  d["error"] = error;
  return d;
}

// codegen::Request from keyword options named as `arfit codegen`'s (without the dashes, '-' as '_').
codegen::Request request_of(const Models& m, const nb::dict& options) {
  codegen::Request r;
  r.models_path = m.path;
  for (auto [key, value] : options) {
    const std::string k = nb::cast<std::string>(key);
    if (k == "system") r.system = nb::cast<std::string>(value);
    else if (k == "sm") r.sm = nb::cast<int>(value);
    else if (k == "transfer_sm") r.transfer_sm = nb::cast<bool>(value);
    else if (k == "tp") r.tp = nb::cast<std::string>(value);
    else if (k == "fusion") r.fusion = nb::cast<std::string>(value);
    else if (k == "hidden") r.hidden = nb::cast<std::string>(value);
    else if (k == "tokens") r.tokens = nb::cast<std::string>(value);
    else if (k == "bytes") r.bytes = nb::cast<std::string>(value);
    else if (k == "nnodes") r.nnodes = nb::cast<int>(value);
    else if (k == "channels") r.channels = nb::cast<int>(value);
    else if (k == "map") r.map = nb::cast<std::vector<std::string>>(value);
    else if (k == "dtype") r.dtype = nb::cast<std::string>(value);
    else if (k == "fallback") r.fallback = nb::cast<std::string>(value);
    else if (k == "consumer_version") r.consumer_version = nb::cast<std::string>(value);
    else if (k == "base") r.base_path = nb::cast<std::string>(value), r.base_text = read_file(r.base_path);
    else if (k == "date") r.date = nb::cast<std::string>(value);
    else throw std::invalid_argument("unknown option '" + k + "' (the options of `arfit codegen`, without dashes)");
  }
  return r;
}

std::pair<std::string, std::string> generate_text(const Models& m, const std::string& format, const nb::dict& options) {
  codegen::find_format(format);
  codegen::Request r = request_of(m, options);
  r.command = codegen::codegen_command_line(m.path, format, r);
  std::string summary;
  std::string text = codegen::generate(m.set, r, format, m.text, &summary);
  return {text, summary};
}

// The strategy table per cell, as columns.
nb::dict table_columns(const Models& m, const nb::dict& options) {
  const codegen::StrategyTable t = codegen::build_request_table(m.set, request_of(m, options));
  std::vector<std::int64_t> tp, tokens, hidden;
  std::vector<double> bytes, margin, regret, choice_us;
  std::vector<std::uint8_t> uncertain, fallback;
  std::vector<std::string> fusion, choice, runner_up;
  for (const codegen::Cell& c : t.cells) {
    tp.push_back(c.tp), tokens.push_back(c.tokens), hidden.push_back(c.hidden), bytes.push_back(c.bytes);
    fusion.push_back(to_string(c.fusion)), choice.push_back(c.choice), runner_up.push_back(c.runner_up);
    margin.push_back(c.margin), regret.push_back(c.expected_regret);
    uncertain.push_back(c.uncertain), fallback.push_back(c.fallback);
    double us = NAN;
    for (const auto& cand : c.candidates)
      if (cand.strategy == c.choice) us = cand.prediction.time_us;
    choice_us.push_back(us);
  }
  nb::dict d;
  d["tp"] = numpy_of(std::move(tp));
  d["fusion"] = fusion;
  d["hidden"] = numpy_of(std::move(hidden));
  d["tokens"] = numpy_of(std::move(tokens));
  d["bytes"] = numpy_of(std::move(bytes));
  d["choice"] = choice;
  d["choice_us"] = numpy_of(std::move(choice_us));
  d["runner_up"] = runner_up;
  d["margin"] = numpy_of(std::move(margin));
  d["uncertain"] = numpy_of(std::move(uncertain));
  d["expected_regret"] = numpy_of(std::move(regret));
  d["fallback"] = numpy_of(std::move(fallback));
  return d;
}

std::string suggest_json(const Models& m, const nb::dict& options, int top) {
  if (top < 0) throw std::invalid_argument("top must be >= 0");
  const codegen::StrategyTable t = codegen::build_request_table(m.set, request_of(m, options));
  return json_document_text(codegen::suggestions_json(t, codegen::suggest_cells(t, top)));
}

// An evaluation protocol of `arfit eval` on samples: its JSON report, its per-point CSV when asked (size protocols and
// alltoallv), and its printed table, exactly what `arfit eval --json/--points` writes. The protocols: fit's size
// protocols (interp2, sparse4, extrap, crossn, crosshw:K), alltoallv (fit/eval_alltoallv.h) and select
// (codegen/select_eval.h, with `plan`); the adaptive replay is the CLI's.
std::tuple<std::string, std::string, std::string> evaluate(const std::vector<std::string>& paths,
                                                           const std::vector<std::pair<std::string, std::string>>& texts,
                                                           const std::string& format, const std::string& protocol,
                                                           const std::vector<std::string>& methods, int threads, bool points,
                                                           const std::string& plan) {
  if (threads < 1) throw std::invalid_argument("threads must be at least 1");
  fit::EvalOptions o;
  o.threads = threads;
  o.keep_points = points;
  if (!methods.empty()) o.methods = methods, o.methods_chosen = true;
  if (protocol == "select") {
    if (!methods.empty()) throw std::invalid_argument("methods are not available for protocol select");
    codegen::SelectOptions so;
    so.plan = plan;
    codegen::check_select_options(so);
    const codegen::SelectReport r = codegen::evaluate_select(gather_samples(paths, texts, format), so);
    return {json_document_text(codegen::select_report_json(r)), std::string(), codegen::format_select_report(r)};
  }
  if (plan != "auto") throw std::invalid_argument("plan is the measured subset of protocol select");
  if (protocol == "alltoallv") {
    if (methods.empty()) o.methods = fit::alltoallv_default_methods();
    fit::check_alltoallv_methods(o);
    const fit::AllToAllvEval r = fit::eval_alltoallv(gather_samples(paths, texts, format), o);
    return {json_document_text(r.to_json()), points ? r.result.points_csv() : std::string(), r.to_table()};
  }
  const fit::ProtocolEntry& entry = fit::find_protocol(fit::fit_protocols(), protocol);
  o.protocol_arg = fit::parse_protocol_spec(protocol).arg.value_or("");
  entry.check(o);
  const fit::EvalResult r = entry.run(gather_samples(paths, texts, format), o);
  if (r.curves == 0) throw std::runtime_error(fit::nothing_to_evaluate_message(protocol, r.nothing_qualifies));
  return {json_document_text(r.to_json()), points ? r.points_csv() : std::string(), r.to_table()};
}

void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const std::invalid_argument& e) {
    PyErr_SetString(g_usage_error, e.what());
  } catch (const OutputPathError& e) {
    PyErr_SetString(g_usage_error, e.what());
  } catch (const std::bad_alloc&) {
    PyErr_NoMemory();
  } catch (const std::exception& e) {
    PyErr_SetString(g_data_error, e.what());
  }
}

}  // namespace
}  // namespace arfit::python

NB_MODULE(_core, m) {
  using namespace arfit::python;
  m.attr("__version__") = ARFIT_VERSION;
  // The classes are plain Python (arfit/_errors.py), so that code catching them needs no extension; held for the
  // module's lifetime.
  const nb::module_ errors = nb::module_::import_("arfit._errors");
  g_error = errors.attr("ArfitError").inc_ref().ptr();
  g_usage_error = errors.attr("UsageError").inc_ref().ptr();
  g_data_error = errors.attr("DataError").inc_ref().ptr();
  nb::register_exception_translator(translate);

  nb::class_<Models>(m, "Models")
      .def_prop_ro("path", [](const Models& x) { return x.path; })
      .def_prop_ro("systems", [](const Models& x) { return x.set.systems(); })
      .def("json", &models_json)
      .def("save", [](const Models& x, const std::string& path) {
        arfit::check_output_file(path);
        arfit::write_string_atomically(path, models_json(x));
      })
      .def("strategies", [](const Models& x, const std::string& system, const std::string& collective,
                             const std::string& fusion, int nranks) {
        return x.set.strategies(system, arfit::parse_collective(collective), arfit::parse_fusion(fusion), nranks);
      });
  m.def("load_models", &load_models, "path"_a);
  m.def("parse_models", &parse_models, "text"_a, "name"_a);
  m.def("samples_csv", &samples_csv_text, "paths"_a, "format"_a);
  m.def("write_samples", &write_samples_text, "text"_a, "name"_a, "path"_a);
  m.def("fit", &fit_models, "paths"_a, "texts"_a, "format"_a, "priors"_a, "family"_a, "threads"_a, "min_points"_a,
        "correction"_a, "joint"_a, "pool"_a);
  m.def(
      "predict",
      [](const Models& models, const std::vector<const Models*>& lenders, const std::string& collective,
         const std::string& strategy, const std::string& system, const std::string& fusion, const std::string& dtype,
         const std::optional<DoubleArray>& bytes, const std::optional<IntArray>& tokens,
         const std::optional<IntArray>& hidden, const IntArray& nranks, const IntArray& nnodes, const IntArray& sms,
         const std::vector<std::string>& splits) {
        arfit::PredictRequest r;
        r.models_name = models.path;
        r.collective = collective, r.strategy = strategy, r.system = system, r.fusion = fusion, r.dtype = dtype;
        return predict_points(models, lenders, r, bytes, tokens, hidden, nranks, nnodes, sms, splits);
      },
      "models"_a, "lenders"_a, "collective"_a, "strategy"_a, "system"_a, "fusion"_a, "dtype"_a,
      "bytes"_a.none(), "tokens"_a.none(), "hidden"_a.none(), "nranks"_a, "nnodes"_a, "sms"_a, "splits"_a);
  m.def(
      "effective_bytes",
      [](const std::vector<std::string>& splits, const std::string& mode, double element_bytes) {
        const arfit::EffectiveMode m = arfit::parse_effective_mode(mode);
        std::vector<double> out;
        for (const std::string& s : splits)
          out.push_back(arfit::effective_alltoall_bytes(arfit::parse_alltoallv_split(s, element_bytes), m));
        return numpy_of(std::move(out));
      },
      "splits"_a, "mode"_a, "element_bytes"_a);
  m.def("generate", &generate_text, "models"_a, "format"_a, "options"_a);
  m.def("formats", [] {
    std::vector<std::string> names;
    for (const auto& f : arfit::codegen::output_formats()) names.push_back(f.name);
    return names;
  });
  m.def("table", &table_columns, "models"_a, "options"_a);
  m.def("suggest", &suggest_json, "models"_a, "options"_a, "top"_a);
  m.def("evaluate", &evaluate, "paths"_a, "texts"_a, "format"_a, "protocol"_a, "methods"_a, "threads"_a, "points"_a,
        "plan"_a);
}
