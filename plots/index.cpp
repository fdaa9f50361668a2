#include "plots/index.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include "io/input_file.h"
#include "io/atomic_output.h"
#include "io/staging_folder.h"

namespace fs = std::filesystem;

namespace arfit::plots {

namespace {

// Display order of the kinds, with a heading for each.
const std::vector<std::pair<std::string, std::string>>& kinds() {
  static const std::vector<std::pair<std::string, std::string>> k{
      {"fit", "Fitted curves"},
      {"cross", "Across TP sizes and SM targets"},
      {"heatmap", "Time per strategy"},
      {"best", "Best strategy"},
      {"diff", "Slower than the best"},
      {"regret", "Regret"},
      {"errors", "Prediction errors"},
      {"alltoallv", "all-to-allv from the all-to-all"},
      {"breakdown", "Profile breakdowns"},
  };
  return k;
}

int kind_rank(const std::string& kind) {
  const auto& k = kinds();
  for (std::size_t i = 0; i < k.size(); ++i)
    if (k[i].first == kind) return static_cast<int>(i);
  return static_cast<int>(k.size());
}

// Kind order, then path.
void sort_entries(std::vector<IndexEntry>& entries) {
  std::sort(entries.begin(), entries.end(), [](const IndexEntry& a, const IndexEntry& b) {
    int ka = kind_rank(a.kind), kb = kind_rank(b.kind);
    if (ka != kb) return ka < kb;
    if (a.kind != b.kind) return a.kind < b.kind;
    return a.script < b.script;
  });
}

std::string relative_to(const fs::path& p, const fs::path& base) {
  std::error_code ec;
  fs::path r = fs::relative(p, base, ec);
  return (ec || r.empty() ? p : r).generic_string();
}

// Percent-encodes what would break an href (spaces, quotes, #, ?, %); keeps '/'.
std::string url_path(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '/' || c == '.' || c == '-' || c == '_' || c == '~') out += static_cast<char>(c);
    else {
      char buf[4];
      std::snprintf(buf, sizeof buf, "%%%02X", c);
      out += buf;
    }
  }
  return out;
}

}  // namespace

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

namespace {

// collect_figures(), leaving out the scripts `skip` names (unsorted).
std::vector<IndexEntry> collect_except(const std::string& dir, const std::set<std::string>& skip) {
  std::vector<IndexEntry> out;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return out;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    const fs::path& p = it->path();
    if (it->is_directory() && is_staging_folder_name(p.filename().string())) {
      it.disable_recursion_pending();  // the figures of a run still going, or of one that was killed
      continue;
    }
    if (!it->is_regular_file() || p.extension() != ".gp" || skip.count(p.string())) continue;
    // read_file records the script as an input, so the output-path rule refuses an index page written over it.
    std::string text;
    try {
      text = read_file(p.string());
    } catch (const std::runtime_error&) {
      continue;  // unreadable: not a figure this page can show
    }
    std::istringstream in(text);
    std::string line;
    if (!std::getline(in, line) || line.rfind("# arfit-figure", 0) != 0) continue;
    IndexEntry e;
    e.script = p.string();
    for (int i = 0; i < 8 && std::getline(in, line); ++i) {
      auto take = [&](const char* key, std::string& field) {
        std::string k = std::string("# ") + key + ": ";
        if (line.rfind(k, 0) == 0) field = line.substr(k.size());
      };
      take("title", e.title);
      take("caption", e.caption);
      take("kind", e.kind);
    }
    fs::path stem = p;
    stem.replace_extension();
    if (fs::exists(stem.string() + ".png")) e.png = stem.string() + ".png";
    if (fs::exists(stem.string() + ".svg")) e.svg = stem.string() + ".svg";
    if (e.png.empty() && e.svg.empty()) continue;
    if (e.title.empty()) e.title = stem.filename().string();
    out.push_back(std::move(e));
  }
  return out;
}

}  // namespace

std::vector<IndexEntry> collect_figures(const std::string& dir) {
  std::vector<IndexEntry> out = collect_except(dir, {});
  sort_entries(out);
  return out;
}

namespace {

// The entries of `dir` as they will be once the figures in `staged` are moved into `dir`: a staged figure takes
// the place of the one of its name (keeping an image of the other format already there). The scripts it replaces
// are not read: read_file would record them as inputs, and the output-path rule would then refuse to replace them.
std::vector<IndexEntry> entries_after_move(const std::string& dir, const std::string& staged) {
  if (staged.empty()) return collect_figures(dir);
  std::vector<IndexEntry> entries;
  std::set<std::string> replaced;
  for (IndexEntry e : collect_except(staged, {})) {
    const std::string stem = (fs::path(dir) / fs::path(e.script).stem()).string();
    auto moved = [&](const std::string& staged_image, const char* ext) {
      const std::string p = stem + ext;
      return !staged_image.empty() || fs::exists(p) ? p : std::string();
    };
    e.script = stem + ".gp";
    e.png = moved(e.png, ".png");
    e.svg = moved(e.svg, ".svg");
    replaced.insert(e.script);
    entries.push_back(std::move(e));
  }
  for (IndexEntry& e : collect_except(dir, replaced)) entries.push_back(std::move(e));
  sort_entries(entries);
  return entries;
}

}  // namespace

IndexPage index_page(const std::string& dir, const std::string& index_path, const std::string& staged,
                     const std::string& page_title) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw std::runtime_error(dir + ": not a folder of figures");
  std::vector<IndexEntry> entries = entries_after_move(dir, staged);
  fs::path base = fs::absolute(index_path).parent_path();

  std::map<std::string, std::vector<const IndexEntry*>> by_kind;
  std::vector<std::string> order;
  for (const auto& e : entries) {
    if (!by_kind.count(e.kind)) order.push_back(e.kind);
    by_kind[e.kind].push_back(&e);
  }
  auto heading = [](const std::string& kind) {
    for (const auto& [k, h] : kinds())
      if (k == kind) return h;
    return kind.empty() ? std::string("Other figures") : kind;
  };

  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" << html_escape(page_title)
    << "</title>\n<!-- generated by arfit plot index (arfit " << ARFIT_VERSION << ") from " << html_escape(dir)
    << "; do not edit, re-run the command -->\n"
    << "<style>\nbody{font-family:sans-serif;margin:1.5em;max-width:1400px;color:#222}\n"
    << "figure{margin:1.2em 0 2em 0;border-top:1px solid #ddd;padding-top:.8em}\n"
    << "figure img{max-width:100%;height:auto;border:1px solid #eee}\n"
    << "figcaption{max-width:60em;line-height:1.4}\n.links{font-size:90%;color:#666}\nnav li{margin:.2em 0}\n</style>\n"
    << "</head>\n<body>\n<h1>" << html_escape(page_title) << "</h1>\n";
  h << "<p>" << entries.size() << " figure" << (entries.size() == 1 ? "" : "s")
    << ". Each figure's gnuplot script (.gp, data inline) lies next to it: edit it and run <code>gnuplot NAME.gp</code> "
       "in its folder to redraw.</p>\n";
  if (entries.empty()) h << "<p>No figures yet.</p>\n";
  h << "<nav><ul>\n";
  for (const auto& k : order)
    h << "<li><a href=\"#" << html_escape(k.empty() ? "other" : k) << "\">" << html_escape(heading(k)) << "</a> ("
      << by_kind[k].size() << ")</li>\n";
  h << "</ul></nav>\n";
  for (const auto& k : order) {
    h << "<section id=\"" << html_escape(k.empty() ? "other" : k) << "\">\n<h2>" << html_escape(heading(k)) << "</h2>\n";
    for (const IndexEntry* e : by_kind[k]) {
      std::string img = url_path(relative_to(e->png.empty() ? e->svg : e->png, base));
      std::string full = url_path(relative_to(e->svg.empty() ? e->png : e->svg, base));
      h << "<figure>\n<a href=\"" << html_escape(full) << "\"><img src=\"" << html_escape(img) << "\" alt=\""
        << html_escape(e->title) << "\" loading=\"lazy\"></a>\n<figcaption><strong>" << html_escape(e->title)
        << "</strong><br>" << html_escape(e->caption) << "<br><span class=\"links\">";
      if (!e->png.empty()) h << "<a href=\"" << html_escape(url_path(relative_to(e->png, base))) << "\">PNG</a> · ";
      if (!e->svg.empty()) h << "<a href=\"" << html_escape(url_path(relative_to(e->svg, base))) << "\">SVG</a> · ";
      h << "<a href=\"" << html_escape(url_path(relative_to(e->script, base))) << "\">gnuplot script</a></span></figcaption>\n</figure>\n";
    }
    h << "</section>\n";
  }
  h << "</body>\n</html>\n";
  return {h.str(), static_cast<int>(entries.size())};
}

int write_index(const std::string& dir, const std::string& index_path, const std::string& page_title) {
  // The folder is read under its lock (io/staging_folder.h OutputFolderLock): a plot run committing into it at the
  // same instant is listed wholly or not at all. index_page refuses what is not a folder.
  std::error_code ec;
  std::optional<OutputFolderLock> lock;
  if (fs::is_directory(dir, ec)) lock.emplace(dir);
  IndexPage page = index_page(dir, index_path, "", page_title);
  fs::create_directories(fs::absolute(index_path).parent_path());
  write_string_atomically(index_path, page.html);
  return page.figures;
}

}  // namespace arfit::plots
