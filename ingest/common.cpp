// Pieces shared by the readers: warning caps and the rank-count inference from busbw/algbw.
#include <cmath>
#include <string>

#include "ingest/readers.h"
#include "ingest/text_util.h"
#include "model/errors.h"
#include "model/sample_csv.h"

namespace arfit::ingest::detail {

void add_warning(IngestResult& r, const std::string& message) {
  // Keep the first kMaxListedWarnings; finish_warnings() says how many more there were.
  if (r.warnings.size() < kMaxListedWarnings) r.warnings.push_back(message);
  else r.warnings.push_back(std::string());  // placeholder, collapsed by finish_warnings
}

void finish_warnings(IngestResult& r, const std::string& name) {
  std::size_t extra = 0;
  std::vector<std::string> kept;
  kept.reserve(r.warnings.size());
  for (auto& w : r.warnings) {
    if (w.empty()) ++extra;
    else kept.push_back(std::move(w));
  }
  if (extra) kept.push_back(name + ": ... and " + std::to_string(extra) + " more warnings");
  r.warnings = std::move(kept);
}

std::map<std::string, std::size_t> csv_header_columns(const std::vector<std::string>& header, bool lower_case,
                                                      const std::string& name, long header_line) {
  std::map<std::string, std::size_t> col;
  for (std::size_t c = 0; c < header.size(); ++c) {
    const std::string h = lower_case ? lower(trim(header[c])) : std::string(trim(header[c]));
    if (h.empty()) throw InputError(name, header_line, "", "empty column name at position " + std::to_string(c + 1));
    if (!col.emplace(h, c).second) throw InputError(name, header_line, h, "duplicated column");
  }
  return col;
}

std::vector<std::string> csv_row_fields(const std::string& line, std::size_t header_fields, long header_line,
                                        const std::string& name, long line_no) {
  bool open_quote = false;
  std::vector<std::string> f = split_csv_line(line, &open_quote);
  if (open_quote) throw InputError(name, line_no, "", "unterminated quoted field");
  if (f.size() != header_fields)
    throw InputError(name, line_no, "", "expected " + std::to_string(header_fields) + " fields (as the header, line " +
                                            std::to_string(header_line) + "), found " + std::to_string(f.size()));
  return f;
}

double half_ulp(const std::string& printed) {
  std::string_view s = trim(printed);
  auto dot = s.find('.');
  auto e = s.find_first_of("eE");
  if (e != std::string_view::npos) {
    // "1.2e+03": decimals of the mantissa, scaled by the exponent
    auto mant = s.substr(0, e);
    auto ex = parse_int(s.substr(e + 1));
    auto md = mant.find('.');
    int decimals = md == std::string_view::npos ? 0 : static_cast<int>(mant.size() - md - 1);
    return 0.5 * std::pow(10.0, static_cast<double>((ex ? *ex : 0) - decimals));
  }
  if (dot == std::string_view::npos) return 0.5;
  int decimals = static_cast<int>(s.size() - dot - 1);
  return 0.5 * std::pow(10.0, -decimals);
}

bool RankInference::informative() const {
  switch (collective_) {
    case Collective::AllReduce:
    case Collective::AllGather:
    case Collective::ReduceScatter:
    case Collective::AllToAll:
    case Collective::AllToAllV:
    case Collective::Gather:
    case Collective::Scatter: return true;
    default: return false;
  }
}

void RankInference::add(const std::string& algbw_text, const std::string& busbw_text) {
  auto a = parse_double(algbw_text);
  auto b = parse_double(busbw_text);
  if (!a || !b) return;
  add(*a, *b, half_ulp(algbw_text), half_ulp(busbw_text));
}

void RankInference::add(double a, double b, double ea, double eb) {
  if (!informative()) return;
  if (!std::isfinite(a) || !std::isfinite(b) || a - ea <= 0 || b - eb <= 0) return;
  const double rlo = (b - eb) / (a + ea);
  const double rhi = (b + eb) / (a - ea);
  // bus factor f(n): all-reduce 2(n-1)/n (n = 2/(2-r)), the others (n-1)/n (n = 1/(1-r)); both increase with n.
  const double cap = collective_ == Collective::AllReduce ? 2.0 : 1.0;
  auto n_of = [&](double r) { return r >= cap ? 1e300 : cap / (cap - r); };
  const double nlo = rlo <= 0 ? 1.0 : n_of(rlo);
  const double nhi = n_of(rhi);
  if (nlo > lo_) lo_ = nlo;
  if (nhi < hi_) hi_ = nhi;
  ++used_;
}

std::optional<int> RankInference::rank_count() const {
  if (!informative() || used_ == 0 || lo_ > hi_) return std::nullopt;
  const double first = std::ceil(lo_ - 1e-9);
  if (first > hi_ + 1e-9) return std::nullopt;
  if (first + 1 <= hi_ + 1e-9) return std::nullopt;  // two or more candidates
  if (first < 1 || first > 1e7) return std::nullopt;
  return static_cast<int>(first);
}

}  // namespace arfit::ingest::detail
