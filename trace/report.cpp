#include "trace/report.h"

#include <filesystem>

#include "io/atomic_output.h"
#include "io/staging_folder.h"
#include "trace/figures.h"

namespace fs = std::filesystem;

namespace arfit::trace {

std::vector<std::string> write_breakdown_report(const Breakdown& b, const std::string& dir, const ReportOptions& opt) {
  if (opt.figures) plots::require_gnuplot();  // fail before anything is written
  StagingFolder staging(dir, "breakdown");  // removed with what it holds unless every file is moved into place
  std::vector<std::string> names;
  auto put = [&](const std::string& name, const std::string& content) {
    write_string_atomically(staging.file(name), content);
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
      add(stacked_figure(class_bars(b, phases), staging.file("breakdown_classes" + suffix)));
      add(stacked_figure(entry_bars(b, phases), staging.file("breakdown_entries" + suffix)));
    }
    add(comm_share_figure(comm_share_bars(b, opt.decode_steps), staging.file("comm_share")));
  }
  return staging.commit(names);
}

}  // namespace arfit::trace
