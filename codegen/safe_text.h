// Names (systems, strategies, input paths) as they may appear in generated code. Models files refuse names with
// control characters when they are read, but a generated file must not rely on that: every name that reaches a
// comment or an identifier of a generated file passes through one of these two, so no name can end its comment
// and run the rest as code, whatever the reader let through.
#pragma once

#include <string>
#include <string_view>

namespace arfit::codegen {

// The comment syntax of the target language.
enum class CommentSyntax {
  Cpp,   // "// ..." of C++ (trtllm, header)
  Hash,  // "# ..." of Python (vllm, sglang, flashinfer) and of the NCCL tuner CSV
};

// `text` as it may stand inside one line comment: each control character (a line break would end the comment)
// and each byte that is not part of valid UTF-8 (Python refuses such a source file) becomes '?'. For C++ a
// backslash becomes '/' (one ending the line would splice the next line into the comment) and "*/" and "/*"
// get a space ("* /", "/ *"), so the text cannot close or open a block comment either.
std::string comment_text(std::string_view text, CommentSyntax syntax);

// A valid C++ identifier for a name, for enumerators: every character but ASCII letters and digits becomes '_',
// runs of '_' become one, and "S_" is put first when the result is empty, starts with '_' or a digit (reserved or
// invalid), is a C++ keyword, or is a macro of the C and C++ standard libraries (NULL, EOF, errno, ...).
// Distinct names may give the same identifier: callers disambiguate.
std::string cpp_identifier(std::string_view name);

}  // namespace arfit::codegen
