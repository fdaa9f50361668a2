#include "plots/gnuplot_runner.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <gnuplot-iostream.h>

#include "io/output_path_rule.h"
#include "io/atomic_output.h"
#include "model/errors.h"
#include "model/text.h"

namespace fs = std::filesystem;

namespace arfit::plots {

std::string extension(ImageFormat f) { return f == ImageFormat::Png ? "png" : "svg"; }

std::vector<ImageFormat> parse_formats(const std::string& s) {
  if (s == "png") return {ImageFormat::Png};
  if (s == "svg") return {ImageFormat::Svg};
  if (s == "both") return {ImageFormat::Png, ImageFormat::Svg};
  throw std::invalid_argument("unknown figure format '" + s + "' (expected png, svg or both)");
}

std::string find_gnuplot() {
  auto executable = [](const std::string& p) { return !p.empty() && ::access(p.c_str(), X_OK) == 0 && !fs::is_directory(p); };
  if (const char* env = std::getenv("ARFIT_GNUPLOT"); env && *env) {
    std::string p = env;
    if (p.find('/') != std::string::npos) return executable(p) ? p : "";
    const char* path = std::getenv("PATH");
    std::stringstream ss(path ? path : "");
    for (std::string dir; std::getline(ss, dir, ':');)
      if (executable(dir + "/" + p)) return dir + "/" + p;
    return "";
  }
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "/usr/bin:/bin");
  for (std::string dir; std::getline(ss, dir, ':');) {
    if (dir.empty()) continue;
    if (executable(dir + "/gnuplot")) return dir + "/gnuplot";
  }
  return "";
}

std::string require_gnuplot() {
  std::string g = find_gnuplot();
  if (g.empty()) {
    const char* env = std::getenv("ARFIT_GNUPLOT");
    if (env && *env)
      throw GnuplotMissing(std::string("gnuplot not found: ARFIT_GNUPLOT='") + env +
                           "' is not an executable; unset it or point it at gnuplot");
    throw GnuplotMissing(
        "gnuplot not found in PATH: figures need gnuplot 5 with the pngcairo and svg terminals "
        "(Debian: apt-get install gnuplot-nox, or run scripts/setup.sh); set ARFIT_GNUPLOT to use another binary");
  }
  return g;
}

namespace {
bool is_control(char c) { return find_control_char(std::string_view(&c, 1)) == 0; }
}  // namespace

std::string gp_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "''";
    else if (is_control(c)) out += ' ';
    else out += c;
  }
  return out + "'";
}

std::string gp_comment(const std::string& text) {
  std::string out = "# ";
  for (char c : text) out += is_control(c) ? ' ' : c;
  // gnuplot joins a line that ends with a backslash to the next one, comments included.
  if (out.back() == '\\') out += ' ';
  return out + "\n";
}

std::string gp_enhanced_escape(const std::string& s) {
  // In gnuplot's enhanced text mode a backslash escapes the next control character; inside a single-quoted
  // gnuplot string one backslash is kept literally, which is what the enhanced-text parser needs.
  std::string out;
  for (char c : s) {
    if (c == '\\' || c == '_' || c == '^' || c == '@' || c == '&' || c == '{' || c == '}' || c == '~') out += '\\';
    out += c;
  }
  return out;
}

std::string gp_number(double v) {
  if (!std::isfinite(v)) return "NaN";
  return format_number(v, "%.15g");
}

std::string data_block(const std::string& name, const std::vector<std::vector<std::string>>& rows) {
  if (name.empty() || name.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != std::string::npos)
    throw std::invalid_argument("data_block: '" + name + "' is not a gnuplot data block name");
  std::string out = "$" + name + " << EOD\n";
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size(); ++i) {
      if (i) out += '\t';
      std::string f = row[i];
      for (char& c : f)
        if (is_control(c)) c = ' ';
      // Quoted: blanks, comments, quotes, a backslash (one ending the line would join the next line, the EOD
      // included) and "EOD..." (any line starting with the terminator ends the block).
      if (f.empty() || f.find_first_of(" \t#\"\\") != std::string::npos || f.rfind("EOD", 0) == 0) {
        out += '"';
        for (char c : f) out += (c == '"' ? '\'' : c);
        out += '"';
      } else {
        out += f;
      }
    }
    out += '\n';
  }
  return out + "EOD\n";
}

namespace {

// "%g"-like with up to 3 significant digits and no trailing zeros.
std::string trim_number(double v) {
  const std::string s = format_number(v, "%.3g");
  if (s.find('e') != std::string::npos && std::fabs(v) >= 1) return format_number(v, "%.0f");  // 1e+03 -> 1000; tiny values keep 1e-05
  return s;
}

// Positions/labels -> "set <axis>tics (...)".
std::string tics_command(const std::string& axis, const std::vector<std::pair<double, std::string>>& tics) {
  std::string out = "set " + axis + "tics (";
  for (std::size_t i = 0; i < tics.size(); ++i) {
    if (i) out += ", ";
    out += gp_quote(tics[i].second) + " " + gp_number(tics[i].first);
  }
  return out + ")\n";
}

// Ignores SIGPIPE while alive, so a gnuplot that exits early (error in the script) cannot kill arfit
// while the last commands are written to its pipe; the failure is then reported from its log.
class ScopedIgnoreSigpipe {
 public:
  ScopedIgnoreSigpipe() {
    struct sigaction ignore {};
    ignore.sa_handler = SIG_IGN;
    sigemptyset(&ignore.sa_mask);
    ::sigaction(SIGPIPE, &ignore, &saved_);
  }
  ~ScopedIgnoreSigpipe() { ::sigaction(SIGPIPE, &saved_, nullptr); }

 private:
  struct sigaction saved_ {};
};

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

void remove_quietly(const std::string& p) {
  std::error_code ec;
  fs::remove(p, ec);
}

}  // namespace

std::string bytes_label(double bytes) {
  static const char* suffix[] = {"", "K", "M", "G", "T", "P"};
  int i = 0;
  double v = bytes;
  while (std::fabs(v) >= 1024 && i < 5) {
    v /= 1024;
    ++i;
  }
  return trim_number(v) + suffix[i];
}

std::string time_label(double us) {
  if (us >= 1e6) return trim_number(us / 1e6) + " s";
  if (us >= 1e3) return trim_number(us / 1e3) + " ms";
  if (us >= 1) return trim_number(us) + " µs";
  return trim_number(us * 1e3) + " ns";
}

std::string si_label(double v) {
  double a = std::fabs(v);
  if (a >= 1e12) return trim_number(v / 1e12) + "T";
  if (a >= 1e9) return trim_number(v / 1e9) + "G";
  if (a >= 1e6) return trim_number(v / 1e6) + "M";
  if (a >= 1e3) return trim_number(v / 1e3) + "K";
  return trim_number(v);
}

std::string pow2_label(std::int64_t v) {
  if (v > 0 && (v & (v - 1)) == 0) {
    int k = 0;
    while ((std::int64_t{1} << k) < v) ++k;
    return "2^{" + std::to_string(k) + "}";
  }
  return std::to_string(v);
}

std::string bytes_tics(const std::string& axis, double lo, double hi, int max_tics) {
  if (!(lo > 0) || !(hi > 0)) return "";
  if (hi < lo) std::swap(lo, hi);
  int k0 = static_cast<int>(std::floor(std::log2(lo) + 1e-9));
  int k1 = static_cast<int>(std::ceil(std::log2(hi) - 1e-9));
  if (k1 <= k0) k1 = k0 + 1;
  int span = k1 - k0;
  int step = 1;
  while (span / step + 1 > std::max(2, max_tics)) ++step;
  // Prefer steps that land on K/M/G boundaries (multiples of 10 bits) when the step is large.
  if (step > 5) step = 10 * ((step + 9) / 10);
  else if (step == 3 || step == 4) step = 5;
  int first = (k0 >= 0) ? ((k0 + step - 1) / step) * step : -((-k0) / step) * step;
  std::vector<std::pair<double, std::string>> tics;
  for (int k = first; k <= k1; k += step) tics.emplace_back(std::ldexp(1.0, k), bytes_label(std::ldexp(1.0, k)));
  return tics_command(axis, tics);
}

namespace {
std::vector<double> decade_positions(double lo, double hi) {
  std::vector<double> out;
  if (!(lo > 0) || !(hi > 0)) return out;
  if (hi < lo) std::swap(lo, hi);
  int d0 = static_cast<int>(std::floor(std::log10(lo) + 1e-9));
  int d1 = static_cast<int>(std::ceil(std::log10(hi) - 1e-9));
  bool fine = (std::log10(hi) - std::log10(lo)) < 2.7;  // short ranges: 1-2-5 steps, else decades only
  int dstep = 1;
  while ((d1 - d0) / dstep + 1 > 9) ++dstep;
  for (int d = d0; d <= d1; d += dstep) {
    double base = std::pow(10.0, d);
    out.push_back(base);
    if (fine) {
      out.push_back(2 * base);
      out.push_back(5 * base);
    }
  }
  // Keep what lies in [lo/1.01, hi*1.01] plus one beyond each end so the axis always has a labelled tick.
  std::vector<double> kept;
  for (double v : out)
    if (v >= lo / 1.01 && v <= hi * 1.01) kept.push_back(v);
  if (kept.empty() && !out.empty()) kept.push_back(out.front());
  return kept;
}
}  // namespace

std::string time_tics(const std::string& axis, double lo_us, double hi_us) {
  std::vector<std::pair<double, std::string>> tics;
  for (double v : decade_positions(lo_us, hi_us)) tics.emplace_back(v, time_label(v));
  return tics.empty() ? "" : tics_command(axis, tics);
}

std::string log_tics(const std::string& axis, double lo, double hi) {
  std::vector<std::pair<double, std::string>> tics;
  for (double v : decade_positions(lo, hi)) tics.emplace_back(v, si_label(v));
  return tics.empty() ? "" : tics_command(axis, tics);
}

std::string pow2_index_tics(const std::string& axis, const std::vector<std::int64_t>& values, int step) {
  std::vector<std::pair<double, std::string>> tics;
  if (step < 1) step = 1;
  for (std::size_t i = 0; i < values.size(); i += static_cast<std::size_t>(step))
    tics.emplace_back(std::log2(static_cast<double>(values[i])), pow2_label(values[i]));
  return tics_command(axis, tics);
}

std::string series_colour(std::size_t index) {
  static const char* palette[] = {"#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
                                  "#000000", "#F0E442", "#8C564B", "#7F7F7F", "#BCBD22", "#17BECF"};
  return palette[index % (sizeof palette / sizeof palette[0])];
}

std::string figure_script(const Figure& f) {
  std::ostringstream s;
  std::string base = fs::path(f.stem).filename().string();
  s << "# arfit-figure v1\n";
  s << gp_comment("title: " + f.title);
  s << gp_comment("caption: " + f.caption);
  s << gp_comment("kind: " + f.kind);
  s << "# generated by arfit plot (arfit " << ARFIT_VERSION << "); the data are inline, edit freely.\n";
  s << gp_comment("render from this folder:  gnuplot " + base + ".gp   or   gnuplot -e \"arfit_format='svg'\" " + base + ".gp");
  s << "if (!exists(\"arfit_format\")) arfit_format = 'png'\n";
  s << "if (!exists(\"arfit_output\")) arfit_output = " << gp_quote(base) << " . '.' . arfit_format\n";
  s << "if (arfit_format eq 'svg') {\n";
  s << "  set terminal svg size " << f.width << "," << f.height << " enhanced font 'DejaVu Sans," << f.font_size
    << "' background rgb 'white'\n";
  s << "} else {\n";
  s << "  set terminal pngcairo size " << f.width << "," << f.height << " enhanced font 'DejaVu Sans,"
    << f.font_size << "' background rgb 'white'\n";
  s << "}\n";
  s << "set output arfit_output\n";
  s << "set encoding utf8\n";
  s << f.body;
  if (!f.body.empty() && f.body.back() != '\n') s << "\n";
  s << "unset output\n";
  return s.str();
}

std::vector<std::string> figure_outputs(const Figure& figure, const std::vector<ImageFormat>& formats) {
  if (figure.stem.empty()) throw std::invalid_argument("render_figure: empty output stem");
  std::vector<std::string> out{figure.stem + ".gp"};
  for (ImageFormat fmt : formats) out.push_back(figure.stem + "." + extension(fmt));
  return out;
}

void check_figure_outputs(const Figure& figure, const std::vector<ImageFormat>& formats) {
  // The paths are handed to gnuplot as quoted strings, which cannot hold a control character.
  if (const std::string why = name_problem(figure.stem); !why.empty())
    throw OutputPathError(figure.stem + ": not a path gnuplot can write: " + why);
  for (const auto& p : figure_outputs(figure, formats)) check_output_path(p);
}

RenderResult render_figure(const Figure& figure, const std::vector<ImageFormat>& formats) {
  // Every output passes the output-path rule before the script is written: a refused image changes nothing.
  check_figure_outputs(figure, formats);
  std::string gnuplot = require_gnuplot();
  RenderResult result;
  fs::path stem = fs::absolute(figure.stem);
  if (stem.has_parent_path()) fs::create_directories(stem.parent_path());
  result.script = stem.string() + ".gp";
  write_string_atomically(result.script, figure_script(figure));

  std::string pid = std::to_string(::getpid());
  for (ImageFormat fmt : formats) {
    std::string ext = extension(fmt);
    std::string final_path = stem.string() + "." + ext;
    TemporaryOutput image(final_path, "." + ext);  // the output-path rule, and removal on signals
    const std::string& tmp = image.path();
    std::string log = stem.string() + ".gnuplot-log.tmp." + pid;
    std::string done = stem.string() + ".gnuplot-done.tmp." + pid;
    remove_quietly(done);
    {
      ScopedIgnoreSigpipe guard;
      // gnuplot reads the commands from the pipe (non-interactive), so an error in the loaded script ends it
      // before it reaches the last lines: the "done" marker is written only when the whole script ran.
      Gnuplot gp(shell_quote(gnuplot) + " >" + shell_quote(log) + " 2>&1 || true");
      gp << "arfit_format = " << gp_quote(ext) << "\n";
      gp << "arfit_output = " << gp_quote(tmp) << "\n";
      gp << "cd " << gp_quote(stem.parent_path().string()) << "\n";
      gp << "load " << gp_quote(result.script) << "\n";
      gp << "set print " << gp_quote(done) << "\nprint 'ok'\nunset print\nexit\n";
      gp.flush();
    }  // ~Gnuplot waits for gnuplot to finish (pclose)
    std::string messages;
    {
      std::ifstream in(log, std::ios::binary);
      std::ostringstream ss;
      ss << in.rdbuf();
      messages = ss.str();
    }
    bool ok = fs::exists(done);
    remove_quietly(done);
    remove_quietly(log);
    std::error_code ec;
    if (!ok || !fs::exists(tmp) || fs::file_size(tmp, ec) == 0) {
      std::string text = messages;
      while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
      if (text.size() > 2000) text = text.substr(0, 2000) + " ...";
      throw GnuplotFailed("gnuplot failed to render " + final_path + " from " + result.script +
                          (text.empty() ? std::string(" (no message)") : ":\n" + text));
    }
    std::istringstream lines(messages);
    for (std::string line; std::getline(lines, line);)
      if (line.find("warning") != std::string::npos) result.warnings.push_back(line);
    image.commit();
    result.images.push_back(final_path);
  }
  return result;
}

}  // namespace arfit::plots
