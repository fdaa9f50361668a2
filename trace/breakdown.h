// Kernel-time breakdown of a profile: per phase, time per operation class (from the kernel leaves) and per
// entry (module or kernel level, top K + "others"), the communication share, and the kernels no rule
// matched (listed, never dropped). Pure computation on plain structs: the CLI writes them, figures.h draws them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/classify.h"
#include "trace/kernel_name.h"
#include "trace/profile.h"

namespace arfit::trace {

enum class Level { Module, Kernel };
Level parse_level(const std::string& s);  // "module" | "kernel"; throws std::invalid_argument

struct BreakdownOptions {
  Level level = Level::Kernel;
  std::vector<std::string> fold;  // node names made leaves (their subtree counts as one entry and one class)
  std::size_t top_k = 10;         // entries kept; the rest summed into "others" (0 = keep all)
};

// A kernel-level leaf (or a folded node) of one phase, with its call path.
struct Leaf {
  std::string name;
  std::vector<std::string> path;  // ancestor names, outermost first
  double time_us = 0;
  std::int64_t invocations = 0;
  bool folded = false;
  const ProfileNode* node = nullptr;
};

// Leaves of a phase; nodes named in `fold` are leaves. Equivalent to entries at kernel level.
std::vector<Leaf> collect_leaves(const Phase& phase, const std::vector<std::string>& fold);
// Entries at the given level: kernel = leaves; module = nodes whose children are all leaves (and leaves
// that sit directly under a deeper module or at the top), i.e. the parents of kernels.
std::vector<Leaf> collect_entries(const Phase& phase, Level level, const std::vector<std::string>& fold);

// Display names for entries that share a name: prefixed with the shortest distinguishing suffix of their call
// path ("SiluAndMul/vectorized_elementwise_kernel"); entries with identical name and path get " #2", " #3".
// Input: (name, path) pairs; output: one display name each, in order.
std::vector<std::string> unique_names(const std::vector<std::pair<std::string, std::vector<std::string>>>& items);


struct ClassTime {
  std::string id, label;
  bool communication = false;
  double time_us = 0;
  std::int64_t invocations = 0;
};

struct EntryTime {
  std::string name;     // unique display name, or "others"
  std::string full_name;  // the node's name (first of the group for "others")
  std::string class_id;   // class of the entry when it is a kernel/folded leaf; "" for modules and "others"
  std::vector<std::string> path;  // call path of the node (outermost first)
  double time_us = 0;
  std::int64_t invocations = 0;
};

struct PhaseBreakdown {
  std::string phase;
  PhaseKind kind = PhaseKind::Other;
  int step = 0;
  double total_us = 0;  // sum of the leaves
  double comm_us = 0;   // sum of communication classes
  std::vector<ClassTime> classes;  // every class of Breakdown::class_ids, in that order (zeros included)
  std::vector<EntryTime> entries;  // every entry of Breakdown::entry_names, in that order (zeros included)
};

struct UnmatchedKernel {
  std::string name;
  double time_us = 0;
  std::int64_t invocations = 0;
  std::vector<std::string> phases;
};

struct Breakdown {
  std::string source;
  std::vector<std::string> class_ids, class_labels;  // classes present, in rule-table order; folded and unmatched last
  std::vector<std::string> entry_names;              // top K by total time over all phases, then "others"
  std::vector<PhaseBreakdown> phases;
  std::vector<UnmatchedKernel> unmatched;  // by total time, largest first
};

inline constexpr const char* kUnmatchedClass = "unmatched";

// True when some node of some phase carries this name.
bool profile_has_node(const Profile& profile, const std::string& name);

Breakdown compute_breakdown(const Profile& profile, const RuleTable& rules, const BreakdownOptions& opt);

// Keeps only the named phases (in profile order); throws std::invalid_argument naming the unknown ones and
// listing the available phases.
Profile select_phases(const Profile& profile, const std::vector<std::string>& names);

// Indices (into phases) to draw: every non-decode phase, and at most `decode_steps` decode steps spread evenly
// over the run, always keeping the first and the last.
std::vector<std::size_t> figure_phases(const std::vector<PhaseBreakdown>& phases, std::size_t decode_steps);

// CSV tables (header + rows).
std::string class_table_csv(const Breakdown& b);     // phase,kind,step,class,label,communication,time_us,share_pct,invocations
std::string entry_table_csv(const Breakdown& b);     // phase,kind,step,entry,name,class,time_us,share_pct,invocations
std::string comm_share_csv(const Breakdown& b);      // phase,kind,step,total_us,comm_us,comm_share_pct
std::string unmatched_csv(const Breakdown& b);       // kernel,time_us,invocations,phases

}  // namespace arfit::trace
