// model/text.h: the one trim / case / number-formatting / fingerprint helper of the project.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

#include "model/errors.h"
#include "model/text.h"

using namespace arfit;

TEST(Text, TrimDropsAsciiWhitespaceAtBothEndsOnly) {
  EXPECT_EQ(trim("  a b\t\r\n"), "a b");
  EXPECT_EQ(trim("\f\v x \v"), "x");
  EXPECT_EQ(trim(" \t\r\n"), "");
  EXPECT_EQ(trim(""), "");
  EXPECT_EQ(trim("\xc2\xa0x"), "\xc2\xa0x");  // a UTF-8 no-break space is not ASCII whitespace
  std::string s = "  keep  ";
  s = trim(s);  // assigning a view of the string to itself
  EXPECT_EQ(s, "keep");
}

TEST(Text, CaseMappingIsAsciiOnly) {
  EXPECT_EQ(lower("AllReduce_NCCL-2.27"), "allreduce_nccl-2.27");
  EXPECT_EQ(upper("oneshot µs"), "ONESHOT µS");  // the bytes of µ unchanged
  EXPECT_EQ(lower("\xc3\x89"), "\xc3\x89");       // É stays as it is
}

TEST(Text, FormatNumberIsOnePrintfConversion) {
  EXPECT_EQ(format_number(1.23456, "%.3f"), "1.235");
  EXPECT_EQ(format_number(1e15, "%.15g"), "1e+15");
  EXPECT_EQ(format_number(0.1, "%.17g"), "0.10000000000000001");
  EXPECT_EQ(format_number(1.5, "%.10g"), "1.5");
  EXPECT_EQ(format_number(std::nan(""), "%.3f"), "nan");
}

// The offset basis is 1469598103934665603, not FNV's 14695981039346656037 (see model/text.h): the empty string
// hashes to it, and each byte is xor-ed in, then multiplied by FNV's 64-bit prime.
TEST(Text, Fnv1a64IsTheXorMultiplyChainFromItsBasis) {
  EXPECT_EQ(fnv1a64_hex(""), "14650fb0739d0383");
  const std::uint64_t basis = 1469598103934665603ull, prime = 1099511628211ull;
  const std::uint64_t a = (basis ^ 'a') * prime, ab = (a ^ 'b') * prime;
  char want[17];
  std::snprintf(want, sizeof want, "%016llx", static_cast<unsigned long long>(ab));
  EXPECT_EQ(fnv1a64_hex("ab"), want);
  EXPECT_NE(fnv1a64_hex("ab"), fnv1a64_hex("ba"));
}

TEST(Text, ControlCharactersAreShownOneWayInNamesAndInputErrors) {
  using namespace std::string_literals;
  EXPECT_EQ(visible_control_chars("a\tb\nc\rd\x1b[0m\x7f" "e\0f"s), "a\\tb\\nc\\rd\\x1b[0m\\x7fe\\x00f");
  EXPECT_EQ(visible_control_chars("a\tb\nc\r", /*keep_layout=*/true), "a\tb\nc\\r");
  EXPECT_EQ(visible_control_chars("plain µs"), "plain µs");  // printable bytes, UTF-8 included, as they are
  // Every byte: an InputError's message and a name's problem show a control character the same way, and every
  // character find_control_char finds is made visible (no raw control byte left).
  for (int b = 0; b < 256; ++b) {
    const std::string one(1, static_cast<char>(b));
    const std::string shown = visible_control_chars(one);
    const bool control = find_control_char(one) != std::string::npos;
    EXPECT_EQ(control, shown != one) << b;
    EXPECT_EQ(find_control_char(shown), std::string::npos) << b;
    if (b != '\n' && b != '\t') {
      EXPECT_EQ(InputError::bounded("x" + one + "y"), "x" + shown + "y") << b;
    }
    if (control) {
      EXPECT_EQ(name_problem("ab" + one), "control character " + shown + " at offset 2 (names hold printable text only)") << b;
    }
  }
  EXPECT_EQ(InputError::bounded("line 1\n\tline 2"), "line 1\n\tline 2");  // a message's own layout is kept
}

// Names are UTF-8 text: a byte that is not (a Latin-1 file's 'µ', a truncated sequence) was carried into models files,
// whose JSON writer then threw "[json.exception.type_error.316] invalid UTF-8 byte" after the fit, naming no file.
TEST(Text, NamesAreWellFormedUtf8) {
  EXPECT_EQ(find_invalid_utf8("plain µs 中文 \xF0\x9F\x98\x80"), std::string::npos);
  EXPECT_EQ(name_problem("H100 µs"), "");
  EXPECT_EQ(find_invalid_utf8("ab\xB5s"), 2u);            // Latin-1 'µ': a continuation byte alone
  EXPECT_EQ(find_invalid_utf8("ab\xC2"), 2u);             // truncated at the end
  EXPECT_EQ(find_invalid_utf8("\xC0\xAF"), 0u);           // overlong '/'
  EXPECT_EQ(find_invalid_utf8("x\xE0\x80\xAF"), 1u);      // overlong, three bytes
  EXPECT_EQ(find_invalid_utf8("\xED\xA0\x80"), 0u);       // a surrogate
  EXPECT_EQ(find_invalid_utf8("\xF4\x90\x80\x80"), 0u);   // above U+10FFFF
  EXPECT_EQ(find_invalid_utf8("\xE2\x82x"), 0u);          // a sequence cut by an ASCII byte
  EXPECT_EQ(find_invalid_utf8("\xFF"), 0u);
  EXPECT_EQ(name_problem("NC\xFF" "CL"), "byte 0xff at offset 2 is not UTF-8 (names are UTF-8 text)");
  // What the check accepts, nlohmann's writer accepts, and the reverse, over every one- and two-byte string
  // (and the three-byte strings starting with the lead bytes whose second-byte ranges are narrowed).
  auto dumps = [](const std::string& s) {
    try {
      (void)nlohmann::json(s).dump();
      return true;
    } catch (const nlohmann::json::type_error&) {
      return false;
    }
  };
  for (int a = 0x20; a < 256; ++a)
    for (int b = 0x20; b < 256; ++b) {
      if (a == 0x7f || b == 0x7f) continue;
      const std::string s{static_cast<char>(a), static_cast<char>(b)};
      EXPECT_EQ(find_invalid_utf8(s) == std::string::npos, dumps(s)) << a << " " << b;
      for (int lead : {0xE0, 0xED, 0xF0, 0xF4}) {
        const std::string t{static_cast<char>(lead), static_cast<char>(a), static_cast<char>(b)};
        EXPECT_EQ(find_invalid_utf8(t) == std::string::npos, dumps(t)) << lead << " " << a << " " << b;
      }
    }
}

// Columns as wide as their widest entry: a long name widens its column and the next one stays apart; numbers to
// the right, names to the left, no trailing blanks, every line indented.
TEST(Text, AlignedColumnsAreAsWideAsTheirContent) {
  const std::string table = aligned_columns({{"name", "n", "note"}, {"RESIDUAL_RMS_NORM/bf16", "8", "x"}, {"a", "1024", ""}},
                                            {false, true, false}, "  ");
  EXPECT_EQ(table,
            "  name                       n  note\n"
            "  RESIDUAL_RMS_NORM/bf16     8  x\n"
            "  a                       1024\n");
}

// One reader of sizes given on a command line (predict's --bytes/--tokens/--hidden, codegen's axes, arbench's
// sizes): a number and a unit of the one table; each option bounds the value itself. codegen's axes took plain
// integers only ("--hidden 128:8K" was refused there while predict and arbench read it).
TEST(Text, SizesOnTheCommandLine) {
  EXPECT_EQ(parse_size_text("4096"), 4096.0);
  EXPECT_EQ(parse_size_text("64K"), 65536.0);
  EXPECT_EQ(parse_size_text("1.5M"), 1572864.0);
  EXPECT_EQ(parse_size_text("8GiB"), 8589934592.0);
  EXPECT_EQ(parse_size_text(".5K"), 512.0);
  std::string why;
  for (const char* bad : {"", " 8", "-8", "+8", "inf", "nan", "K", "abc"}) {
    EXPECT_FALSE(parse_size_text(bad, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
  EXPECT_FALSE(parse_size_text("1MB", &why));
  EXPECT_NE(why.find("'1MB': size unit 'MB' is ambiguous"), std::string::npos) << why;
  EXPECT_FALSE(parse_size_text("1e400", &why));
  EXPECT_NE(why.find("not a finite size"), std::string::npos) << why;
}

// Counts, indices and seeds given as text (crosshw:K, --plan lattice:K, arbench's --profile-cases and --splits):
// decimal digits only. std::stoi/stoll read "crosshw: 2" and "crosshw:+2" as 2 and std::stod "1e3" as 1000, so a
// typo passed as a count.
TEST(Text, WholeNumbersAreDecimalDigitsWithinTheirRange) {
  EXPECT_EQ(parse_whole_number("0", 0, 10), 0u);
  EXPECT_EQ(parse_whole_number("42", 0, 100), 42u);
  std::string zero_why;
  EXPECT_FALSE(parse_whole_number("007", 0, 10, &zero_why));
  EXPECT_EQ(zero_why, "'007' has a leading zero, read as octal by C's rules; write 7; expected 0..10");
  EXPECT_EQ(parse_whole_number("18446744073709551615", 0, UINT64_MAX), UINT64_MAX);
  EXPECT_EQ(parse_whole_number("2147483647", 1, 2147483647), 2147483647u);
  std::string why;
  for (const char* bad : {" 2", "2 ", "+2", "-2", "2.0", "2.", "1e3", "0x10", "2K", "two", "\t2", "٢"}) {
    why.clear();
    EXPECT_FALSE(parse_whole_number(bad, 0, 100, &why)) << bad;
    EXPECT_NE(why.find("is not a whole number (decimal digits only"), std::string::npos) << bad << ": " << why;
    EXPECT_NE(why.find("expected 0..100"), std::string::npos) << why;
  }
  EXPECT_FALSE(parse_whole_number("", 1, 5, &why));
  EXPECT_EQ(why, "no number given; expected a whole number in 1..5");
  EXPECT_FALSE(parse_whole_number("0", 1, 5, &why));
  EXPECT_EQ(why, "'0' is outside 1..5");
  EXPECT_FALSE(parse_whole_number("6", 1, 5, &why));
  EXPECT_EQ(why, "'6' is outside 1..5");
  // Beyond 64 bits is outside every range, not wrapped (2^64 would read as 0, 2^64 + 1 as 1).
  EXPECT_FALSE(parse_whole_number("18446744073709551616", 0, UINT64_MAX, &why));
  EXPECT_EQ(why, "'18446744073709551616' is outside 0..18446744073709551615");
  EXPECT_FALSE(parse_whole_number("18446744073709551617", 0, UINT64_MAX));
  // A control character is shown, not passed to the terminal.
  EXPECT_FALSE(parse_whole_number(std::string("2\n"), 0, 5, &why));
  EXPECT_EQ(why.rfind("'2\\n' is not", 0), 0u) << why;
}

// Integer options of arfit and arbench read as plain decimal: CLI11 reads them as strtoll with base 0, so
// `--nranks 016` asked for 14 GPUs and 0x8, +8 and ' 8' for 8. A leading zero is refused, not read as decimal:
// CLI11's own range check has already read it as octal.
TEST(Text, IntegerOptionsArePlainDecimal) {
  for (const char* good : {"0", "8", "-8", "1048576", "-0"}) EXPECT_EQ(integer_option_problem(good), "") << good;
  for (const char* bad : {"+8", "0x8", " 8", "8 ", "8.0", "1e1", "", "-", "0b1", "٨"})
    EXPECT_NE(integer_option_problem(bad).find("is not a decimal integer"), std::string::npos) << bad;
  EXPECT_EQ(integer_option_problem("016"), "'016' has a leading zero, read as octal by C's rules; write 16");
  EXPECT_EQ(integer_option_problem("-007"), "'-007' has a leading zero, read as octal by C's rules; write -7");
  EXPECT_EQ(integer_option_problem("00"), "'00' has a leading zero, read as octal by C's rules; write 0");
}

// One unit table for every byte size arfit reads (arbench --bytes, predict --bytes, measurement logs): powers of
// 1024, decimal-looking units refused as ambiguous; one formatter for every size it prints.
TEST(Text, ByteUnitsAndHumanBytes) {
  EXPECT_EQ(byte_unit_multiplier(""), 1.0);
  EXPECT_EQ(byte_unit_multiplier("B"), 1.0);
  EXPECT_EQ(byte_unit_multiplier("k"), 1024.0);
  EXPECT_EQ(byte_unit_multiplier("MiB"), 1048576.0);
  EXPECT_EQ(byte_unit_multiplier("g"), 1073741824.0);
  EXPECT_EQ(byte_unit_multiplier("TiB"), 1099511627776.0);
  std::string why;
  EXPECT_FALSE(byte_unit_multiplier("MB", &why));
  EXPECT_NE(why.find("ambiguous"), std::string::npos) << why;
  EXPECT_FALSE(byte_unit_multiplier("Mb", &why));
  EXPECT_NE(why.find("unknown size unit 'Mb'"), std::string::npos) << why;
  EXPECT_EQ(human_bytes(1536), "1.5 KiB");
  EXPECT_EQ(human_bytes(8388608), "8 MiB");
  EXPECT_EQ(human_bytes(1000), "1000 B");
  EXPECT_EQ(human_bytes(1e6, 6), "976.562 KiB");
  EXPECT_EQ(human_bytes(1e18), "888.2 PiB");
}

// Rounding that reaches 1024 of a unit carries into the next one, at every boundary from KiB to EiB and at every
// precision; %g's exponent form never shows.
TEST(Text, HumanBytesCarriesRoundingIntoTheNextUnit) {
  const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  for (int k = 1; k <= 6; ++k) {
    const double unit = std::ldexp(1.0, 10 * k);
    SCOPED_TRACE(units[k]);
    EXPECT_EQ(human_bytes(unit), std::string("1 ") + units[k]);
    EXPECT_EQ(human_bytes(unit * 1023), std::string("1023 ") + units[k]);
    // Just below the boundary: 1023.99... of the unit below, "1024" once rounded, is the next unit.
    EXPECT_EQ(human_bytes(unit * (1 - 1e-9)), std::string("1 ") + units[k]);
    EXPECT_EQ(human_bytes(unit * (1 - 1e-9), 6), std::string("1 ") + units[k]);
    // At 2 digits 1023.99 rounds to 1000, below the next unit: written out in the unit below.
    EXPECT_EQ(human_bytes(unit * (1 - 1e-5), 2), std::string("1000 ") + units[k - 1]);
    EXPECT_EQ(human_bytes(unit * (1 - 1e-5), 3), std::string("1020 ") + units[k - 1]);
  }
  EXPECT_EQ(human_bytes(std::ldexp(1.0, 30) - 1, 6), "1 GiB");
  // Where the next unit shows the difference at that precision, it does.
  EXPECT_EQ(human_bytes(std::ldexp(1.0, 20) - 1, 6), "0.999999 MiB");
  EXPECT_EQ(human_bytes(1023.6), "0.9996 KiB");
  // Whole bytes below 1024 are exact at 4 digits or more.
  EXPECT_EQ(human_bytes(1023), "1023 B");
  EXPECT_EQ(human_bytes(1023, 6), "1023 B");
  // Fewer digits than the integer part has: the rounded value written out, not "1e+03".
  EXPECT_EQ(human_bytes(1000, 2), "1000 B");
  EXPECT_EQ(human_bytes(1023, 3), "1020 B");
  EXPECT_EQ(human_bytes(1e6, 1), "1000 KiB");
  EXPECT_EQ(human_bytes(1536, 1), "2 KiB");
  // EiB is the last unit: nothing to carry into.
  EXPECT_EQ(human_bytes(std::ldexp(1.0, 70)), "1024 EiB");
  EXPECT_EQ(human_bytes(std::ldexp(1.0, 70) * (1 - 1e-9)), "1024 EiB");
}

TEST(Text, DecimalNumbersAreDigitsAndOnePoint) {
  EXPECT_EQ(parse_decimal("10", 0, 100), 10.0);
  EXPECT_EQ(parse_decimal("2.5", 0, 100), 2.5);
  EXPECT_EQ(parse_decimal(".5", 0, 100), 0.5);
  EXPECT_EQ(parse_decimal("3.", 0, 100), 3.0);
  std::string why;
  for (const char* bad : {"", ".", "1e3", "+1", "-1", " 1", "1 ", "1.2.3", "0x10", "inf", "nan", "1,5"}) {
    EXPECT_FALSE(parse_decimal(bad, 0, 1e9, &why)) << bad;
    EXPECT_FALSE(why.empty()) << bad;
  }
  EXPECT_FALSE(parse_decimal("101", 0, 100, &why));
  EXPECT_NE(why.find("outside 0..100"), std::string::npos) << why;
}

TEST(Text, DurationsNeedAUnit) {
  EXPECT_EQ(parse_duration("90s"), 90.0);
  EXPECT_EQ(parse_duration("250ms"), 0.25);
  EXPECT_EQ(parse_duration("10min"), 600.0);
  EXPECT_EQ(parse_duration("1.5h"), 5400.0);
  EXPECT_EQ(parse_duration("0ms"), 0.0);
  std::string why;
  EXPECT_FALSE(parse_duration("60", &why));
  EXPECT_NE(why.find("has no unit; write 60s"), std::string::npos) << why;
  EXPECT_FALSE(parse_duration("60sec", &why));
  EXPECT_NE(why.find("unknown unit 'sec'"), std::string::npos) << why;
  for (const char* bad : {"", "s", "1 s", " 1s", "1s ", "-1s", "+1s", "1e3s", "1m", "1S", "1.5.2s", "1s2", "20000h"})
    EXPECT_FALSE(parse_duration(bad, &why)) << bad;
  EXPECT_EQ(format_duration(0.25), "250 ms");
  EXPECT_EQ(format_duration(42.1), "42.1 s");
  EXPECT_EQ(format_duration(725), "12 min 5 s");
  EXPECT_EQ(format_duration(7380), "2 h 03 min");
  EXPECT_EQ(format_duration(0), "0 s");
}
