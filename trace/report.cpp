#include "trace/report.h"

#include <filesystem>
#include <unistd.h>

#include "model/atomic_file.h"
#include "trace/figures.h"

namespace fs = std::filesystem;

namespace arfit::trace {

std::vector<std::string> write_breakdown_report(const Breakdown& b, const std::string& dir, const ReportOptions& opt) {
  if (opt.figures) plots::require_gnuplot();  // fail before anything is written
  fs::create_directories(dir);
  fs::path staging = fs::path(dir) / (".arfit-breakdown.tmp." + std::to_string(::getpid()));
  std::error_code ec;
  fs::remove_all(staging, ec);
  fs::create_directories(staging);
  std::vector<std::string> names;
  try {
    auto put = [&](const std::string& name, const std::string& content) {
      write_string_atomically((staging / name).string(), content);
      names.push_back(name);
    };
    put("breakdown_classes.csv", class_table_csv(b));
    put("breakdown_entries.csv", entry_table_csv(b));
    put("comm_share.csv", comm_share_csv(b));
    put("unmatched_kernels.csv", unmatched_csv(b));
    if (opt.figures) {
      auto add = [&](const plots::Figure& f) {
        plots::RenderResult r = plots::render_figure(f, opt.formats);
        names.push_back(fs::path(r.script).filename().string());
        for (const auto& img : r.images) names.push_back(fs::path(img).filename().string());
      };
      for (FigurePart part : {FigurePart::Prefill, FigurePart::Decode}) {
        auto phases = part_phases(b, part, opt.decode_steps);
        if (phases.empty()) continue;
        bool has_prefill = false;
        for (auto i : phases) has_prefill = has_prefill || b.phases[i].kind == PhaseKind::Prefill;
        std::string suffix = part == FigurePart::Decode ? "_decode" : has_prefill ? "_prefill" : "_all";
        add(stacked_figure(class_bars(b, phases), (staging / ("breakdown_classes" + suffix)).string()));
        add(stacked_figure(entry_bars(b, phases), (staging / ("breakdown_entries" + suffix)).string()));
      }
      add(comm_share_figure(comm_share_bars(b, opt.decode_steps), (staging / "comm_share").string()));
    }
    // Every destination passes the output-path rule before the first one is replaced: a refused name (an
    // input of this run, a read-only file) leaves the folder as it was.
    std::vector<std::string> out;
    for (const auto& n : names) {
      out.push_back((fs::path(dir) / n).string());
      check_output_path(out.back());
    }
    for (std::size_t i = 0; i < names.size(); ++i) move_into_place((staging / names[i]).string(), out[i]);
    fs::remove_all(staging, ec);
    return out;
  } catch (...) {
    fs::remove_all(staging, ec);
    throw;
  }
}

}  // namespace arfit::trace
