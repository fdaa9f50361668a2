// Small text helpers, one of each kind for the whole project (readers, writers, the CLI, arbench): trimming,
// ASCII case, a number through a printf conversion, and the content fingerprint printed next to inputs.
// Locale-free: case mapping and whitespace are ASCII whatever the C locale says.
#pragma once

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace arfit {

// ASCII whitespace: space, \t, \r, \n, \f, \v.
bool is_space(char c);

// `s` without leading and trailing ASCII whitespace (space, \t, \r, \n, \f, \v). A view into `s`: keep the
// string it views alive (assign it to a std::string to keep a copy).
std::string_view trim(std::string_view s);

// Where the first ASCII control character (0x00–0x1f, 0x7f) of `s` is, or npos. Names read from files (machines,
// strategies, devices, element types) may hold none: a line break in a name would end a comment of a generated
// table or a gnuplot script and let the rest of the name run as code there.
std::size_t find_control_char(std::string_view s);
// Where the first byte of `s` that does not belong to well-formed UTF-8 is (a stray continuation byte, a truncated
// sequence, an overlong form, a surrogate, a code point above U+10FFFF), or npos. Names go into models files and
// JSON outputs, whose writer refuses ill-formed UTF-8 (nlohmann's dump throws), and into the terminal.
std::size_t find_invalid_utf8(std::string_view s);
// Why `s` is not a name ("control character \n at offset 3", "byte 0xff at offset 2 is not UTF-8"), or "" when
// it is one (find_control_char, find_invalid_utf8).
std::string name_problem(std::string_view s);
// `s` with its control characters (those find_control_char finds) written so that a message shows them: \a \b
// \t \n \v \f \r as in C, the others (NUL, ESC, DEL, ...) as \xNN. A NUL would end a message (what() is a C
// string) and an escape sequence would reach the terminal. `keep_layout`: line breaks and tabs stay as they are
// (a message's own layout; InputError keeps them). The one rendering of control characters in the project.
std::string visible_control_chars(std::string_view s, bool keep_layout = false);

// Every item of `s` between separators `sep`, as written, empty ones included: "1,,2" gives "1", "", "2", so that
// an option's parser can refuse a doubled or trailing separator instead of reading "1,2".
std::vector<std::string> split_items(std::string_view s, char sep);

// ASCII case mapping; other bytes (UTF-8 included) are kept as they are.
std::string lower(std::string_view s);
std::string upper(std::string_view s);

// One double through one printf conversion ("%.3f", "%.4g", "%.15g"): the format must hold exactly one
// conversion of a double and print at most 63 characters.
std::string format_number(double v, const char* printf_format);

// FNV-1a-style 64-bit hash of `bytes` as 16 lower-case hex digits: the fingerprint of an input named in a models
// file ("fnv1a64") or a generated table's banner. Its offset basis is 1469598103934665603, not FNV's
// 14695981039346656037 (a digit was lost when it was first written); kept so that the fingerprints in files
// written before stay comparable. Any fixed basis serves the purpose, telling input files apart.
std::string fnv1a64_hex(std::string_view bytes);

// The multiplier of a byte-size unit, powers of 1024 as nccl-tests' -b/-e take them: "" and "B" 1; "K", "k",
// "KiB" 1024; "M"/"m"/"MiB", "G"/"g"/"GiB", "T"/"t"/"TiB". The decimal-looking KB, kB, MB, GB, TB are refused as ambiguous
// (is 1 MB 10^6 or 2^20 bytes?). nullopt with *why set on any other unit. One unit table for every size arfit
// reads: arbench's --bytes, arfit predict's --bytes, the sizes of measurement logs.
std::optional<double> byte_unit_multiplier(std::string_view unit, std::string* why = nullptr);
// A size written in a command-line option: a decimal number (no sign, no leading blank) and an optional unit of
// byte_unit_multiplier, "4096", "64K", "1.5M", "8G" (powers of 1024), as a finite value. nullopt with *why set
// ("'abc' is not a size (examples: 8, 1K, 64M, 8G)", "'1MB': size unit 'MB' is ambiguous ...") otherwise. Not
// bounded: each option checks its own range and whether it takes fractions. The one reader of sizes given on a
// command line: arfit predict's --bytes/--tokens/--hidden, codegen's axes, arbench's sizes.
std::optional<double> parse_size_text(std::string_view text, std::string* why = nullptr);
// A whole number written in an option or a setting: decimal digits only ("0", "42"; no leading zero, as in integer
// options: "007" names 7 only by luck of C's rules, "010" would be 8), within [min, max]. No sign, blank, point,
// exponent or hex prefix: strtol/stoll read "+2", " 2" and "2 " (after a trim) and stod
// "1e3" and "0x10", so that a typo or a pasted field passed as a count. nullopt with *why set otherwise, a clause
// for the caller to put after what the number is ("crosshw:K: K ..."): "'+2' is not a whole number (decimal
// digits only: no sign, blank, point or exponent); expected 1..2147483647", "'0' is outside 1..2147483647". The one
// reader of counts, indices and seeds given as text: arfit eval's crosshw:K and --plan lattice:K, arbench's
// --plan, --profile-cases and --splits fields, SOURCE_DATE_EPOCH.
std::optional<std::uint64_t> parse_whole_number(std::string_view text, std::uint64_t min, std::uint64_t max,
                                                std::string* why = nullptr);
// A decimal number written in an option or a setting: digits with at most one point ("10", "2.5", ".5", "3."),
// within [min, max]. No sign, blank, exponent, hex form, inf or nan. nullopt with *why set otherwise, a clause for the
// caller to put after what the number is: "'1e3' is not a decimal number (digits and one point only: no sign,
// blank or exponent); expected 0..100". The reader of percentages (arbench --until-regret, arfit eval's
// adaptive:BUDGET) and of the number of a duration (parse_duration).
std::optional<double> parse_decimal(std::string_view text, double min, double max, std::string* why = nullptr);
// A duration: a decimal number (parse_decimal) and a unit, one of ms, s, min, h, with nothing between or around
// them: "90s", "1.5h", "10min", "250ms". The unit is required: a bare "60" could be seconds or minutes. Seconds,
// from 0 up to 10^7 s (about 116 days); each option checks its own range (zero may mean none). nullopt with *why
// set otherwise ("'60' has no unit; write 60s, 60min, ... (units: ms, s, min, h)"). The one reader of durations:
// arbench's --budget, arfit eval's --overhead.
std::optional<double> parse_duration(std::string_view text, std::string* why = nullptr);
// A duration for people: "850 ms", "42.1 s", "12 min 5 s", "2 h 03 min"; "0 s" for zero.
std::string format_duration(double seconds);
// Why `text`, given to an integer command-line option, is not the plain decimal integer it is read as, or "" when
// it is: an optional '-' then decimal digits, without a leading zero ("0" itself aside). CLI11 reads integers as
// C's strtoll with base 0, so `--nranks 016` asked for 14 GPUs (octal), `0x8` and ' 8' and '+8' for 8, and a
// zero-padded count from a script asked another question; its range checks still say what is out of range. The
// check behind every integer option of arfit and arbench (cli/commands.h, bench/options.cpp).
std::string integer_option_problem(std::string_view text);
// A byte count for people, in powers of 1024 with `significant` digits: 1536 -> "1.5 KiB", 8388608 -> "8 MiB",
// 1000 -> "1000 B". Rounding that reaches 1024 moves to the next unit (2^30 - 1 at 6 digits -> "1 GiB", not
// "1024 MiB"); no exponent form (1000 at 2 digits -> "1000 B").
std::string human_bytes(double bytes, int significant = 4);

// `rows` (the first one usually the header) as columns as wide as their widest entry, `gap` spaces apart, each
// line starting with `indent`; columns where right_aligned[c] (numbers) to the right, the others (names) to the
// left; trailing blanks dropped. Widths come from the content, so a long name widens its column instead of
// running into the next one (fixed printf widths did).
std::string aligned_columns(const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right_aligned,
                            std::string_view indent = "", std::size_t gap = 2);

// The elements of `items` as operator<< prints them (strings, integers) with `separator` between them: "2, 4, 8".
template <typename Range>
std::string join(const Range& items, std::string_view separator) {
  std::ostringstream out;
  bool first = true;
  for (const auto& item : items) {
    if (!first) out << separator;
    out << item;
    first = false;
  }
  return out.str();
}

}  // namespace arfit
