// The figure index: one static HTML page (no scripts) that shows every figure under a folder with its title
// and caption, grouped by kind, so a person can open one file and browse. It is built from the .gp scripts
// render_figure() leaves next to each image (their "# title:", "# caption:" and "# kind:" header lines), so
// any command, or several in turn, can draw into a folder and the index is rebuilt from what is there.
#pragma once

#include <string>
#include <vector>

namespace arfit::plots {

struct IndexEntry {
  std::string script;  // path of the .gp
  std::string png, svg;  // image paths ("" when absent)
  std::string title, caption, kind;
};

// Every figure under `dir` (recursively), sorted by kind order then path. A .gp without an arfit-figure header
// or without any image next to it is skipped.
std::vector<IndexEntry> collect_figures(const std::string& dir);

struct IndexPage {
  std::string html;
  int figures = 0;
};
// The page write_index() writes. With `staged` (a command's staging folder, io/staging_folder.h StagingFolder),
// the page shows `dir` as it will be once the figures staged there are moved into `dir`, so a command can prepare
// its index before it moves any figure. Staging folders under `dir` are never listed.
IndexPage index_page(const std::string& dir, const std::string& index_path, const std::string& staged = "",
                     const std::string& page_title = "arfit figures");

// Writes the index page (atomically) linking images relative to the page's folder. Returns the number of
// figures listed. Throws std::runtime_error when `dir` is not a folder. Reads `dir` under its OutputFolderLock, so a
// run committing figures into it at the same instant is listed wholly or not at all (index_page's callers with a
// staging folder hold it through StagingFolder::lock).
int write_index(const std::string& dir, const std::string& index_path, const std::string& page_title = "arfit figures");

// HTML text escaping (& < > " ').
std::string html_escape(const std::string& s);

}  // namespace arfit::plots
