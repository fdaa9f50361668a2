// The request-level API behind `arfit codegen` and `arfit suggest`: models file + options -> the format's table ->
// generated text. The formats live one per file (codegen/formats.h); the CLI only parses options and writes files.
#pragma once

#include <string>
#include <vector>

#include "codegen/formats.h"
#include "codegen/request.h"
#include "codegen/table.h"
#include "codegen/writers.h"
#include "model/model_set.h"

namespace arfit::codegen {

Banner make_banner(const ModelSet& models, const Request& request, const std::string& models_text);

// Everything `arfit codegen` writes for `format` (a name of output_formats()), as text. `models_text` is the
// models file's content (for its hash). Throws std::invalid_argument for usage errors, naming the option.
std::string generate(const ModelSet& models, const Request& request, const std::string& format,
                     const std::string& models_text, std::string* summary = nullptr);

// `arfit suggest`: the uncertain cells (best and runner-up intervals overlap) ranked by expected regret, highest
// first (ties: table order) -- the measurements that would most improve the table. top <= 0: all of them.
std::vector<const Cell*> suggest_cells(const StrategyTable& table, int top);
std::string format_suggestions(const StrategyTable& table, const std::vector<const Cell*>& cells);
nlohmann::json suggestions_json(const StrategyTable& table, const std::vector<const Cell*>& cells);

}  // namespace arfit::codegen
