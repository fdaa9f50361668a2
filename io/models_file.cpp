// ModelSet's file: declared with the class (model/model_set.h), defined here with the other file I/O, so that model/
// holds no I/O and needs nothing from io/.
#include "io/atomic_output.h"
#include "io/input_file.h"
#include "model/json_input.h"
#include "model/model_set.h"

namespace arfit {

ModelSet ModelSet::load(const std::string& path) { return parse(read_input_file(path), path); }

void ModelSet::save(const std::string& path) const { write_string_atomically(path, json_document_text(json_)); }

}  // namespace arfit
