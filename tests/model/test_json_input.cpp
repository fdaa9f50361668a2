// model/json_input.h: parse_json refuses a key repeated within one object (nlohmann keeps the last, silently),
// and only that: keys of other objects, strings that look like JSON, and escapes are told apart.
#include <gtest/gtest.h>

#include <string>

#include "model/errors.h"
#include "model/json_input.h"

using namespace arfit;

namespace {

// The line parse_json names for a repeated key, or 0 when the text parses.
long repeated_key_line(const std::string& text, std::string* message = nullptr) {
  try {
    parse_json(text, "t.json");
    return 0;
  } catch (const InputError& e) {
    if (message) *message = e.what();
    return e.line();
  }
}

}  // namespace

TEST(JsonInput, KeysOfDifferentObjectsOrLevelsAreNotRepeats) {
  EXPECT_EQ(repeated_key_line(R"({"a": 1, "b": {"a": 2, "b": [ {"a": 3}, {"a": 4} ]}})"), 0);
  EXPECT_EQ(repeated_key_line(R"([{"a": 1}, {"a": 2}, [{"a": 3}], {}])"), 0);
  EXPECT_EQ(repeated_key_line(R"({"a": {}, "b": {}, "c": [], "d": [[], [{}]]})"), 0);
  EXPECT_EQ(repeated_key_line(R"({})"), 0);
  EXPECT_EQ(repeated_key_line(R"("a string, not an object")"), 0);
  // A key that only differs by case, or by a trailing space, is another key.
  EXPECT_EQ(repeated_key_line(R"({"a": 1, "A": 2, "a ": 3})"), 0);
}

TEST(JsonInput, StringsThatLookLikeJsonAreText) {
  // Braces, brackets, commas, colons and quoted keys inside string values and keys are no structure.
  EXPECT_EQ(repeated_key_line(R"({"a": "}, \"a\": {", "b": "[,{\"b\":1},]", "c,}": 1, "{\"c\"": 2})"), 0);
  // An escaped backslash right before the closing quote ends the string.
  EXPECT_EQ(repeated_key_line(R"({"a\\": 1, "a": 2, "b": "x\\", "c": 3})"), 0);
  // A value string equal to an earlier key is not a key.
  EXPECT_EQ(repeated_key_line(R"({"a": "a", "b": ["a", "b"], "c": {"d": "c"}})"), 0);
}

TEST(JsonInput, RepeatedKeysAreFoundWhereverTheyAre) {
  std::string message;
  EXPECT_EQ(repeated_key_line("{\n \"a\": 1,\n \"b\": 2,\n \"a\": 3\n}", &message), 4);
  EXPECT_NE(message.find("key 'a' appears twice"), std::string::npos) << message;
  // In an object in an array in an object, after values of every kind.
  EXPECT_EQ(repeated_key_line("{\"x\": [1, {\"k\": [], \"m\": {\"k\": 1}, \"s\": \"}\",\n \"k\": null}]}"), 2);
  // The second of two objects in an array.
  EXPECT_EQ(repeated_key_line("[{\"a\": 1}, {\"a\": 1,\n\"a\": 1}]"), 2);
  // An empty key, twice.
  EXPECT_EQ(repeated_key_line(R"({"": 1, "": 2})"), 1);
}

TEST(JsonInput, KeysCompareUnescaped) {
  std::string message;
  // \u0061 is "a"; \" inside a key; \/ is "/". nlohmann reads both spellings as one key and keeps the last.
  EXPECT_EQ(repeated_key_line("{\"a\": 1,\n\"\\u0061\": 2}", &message), 2);
  EXPECT_NE(message.find("key 'a'"), std::string::npos) << message;
  EXPECT_EQ(repeated_key_line("{\"q\\\"k\": 1,\n\n\"q\\u0022k\": 2}", &message), 3);
  EXPECT_NE(message.find("key 'q\"k'"), std::string::npos) << message;
  EXPECT_EQ(repeated_key_line(R"({"a/b": 1, "a\/b": 2})"), 1);
  // A non-ASCII key written raw and as a surrogate-free escape (é = U+00E9).
  EXPECT_EQ(repeated_key_line("{\"\xc3\xa9\": 1,\n\"\\u00e9\": 2}"), 2);
  // Escapes that unescape to different keys stay apart.
  EXPECT_EQ(repeated_key_line(R"({"\u0061": 1, "\u0062": 2, "a\\": 3, "a\\\\": 4})"), 0);
}

// One scan before the parse finds both the nesting bound and a repeated key; the errors come in this order:
// too deep (before anything is built, wherever it is), not JSON, a repeated key (only in text that parses).
TEST(JsonInput, DepthThenSyntaxThenRepeatedKey) {
  std::string message;
  const std::string deep = std::string(5, '[') + std::string(5, ']');
  const auto refusal = [&](const std::string& text, int max_depth) {
    try {
      parse_json(text, "t.json", max_depth);
      return std::string("parsed");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
  };
  // Exactly the bound parses; one level more is refused at the bracket that exceeds it, even after a repeat.
  EXPECT_EQ(refusal(deep, 5), "parsed");
  EXPECT_NE(refusal("{\"a\": 1, \"a\": 2,\n\"b\": " + deep + "}", 5).find("t.json:2: JSON nested deeper than 5"),
            std::string::npos);
  // Too deep in text that is not JSON either (a missing bracket at the end).
  EXPECT_NE(refusal("{\"b\": " + deep + ", \"a\": [", 4).find("nested deeper than 4"), std::string::npos);
  // A repeat before a syntax error: the syntax error (line 3), not the repeat (line 2).
  const std::string bad = refusal("{\"a\": 1,\n\"a\": 2,\n\"b\": tru}", 512);
  EXPECT_NE(bad.find("t.json:3: invalid JSON"), std::string::npos) << bad;
  // A key with a bad escape, or a string that never ends: the parser's error, not a scan's.
  EXPECT_NE(refusal(R"({"a\q": 1, "a\q": 2})", 512).find("invalid JSON"), std::string::npos);
  EXPECT_NE(refusal("{\"a\": 1, \"a", 512).find("invalid JSON"), std::string::npos);
  // The repeat after the deepest nesting allowed is still found.
  EXPECT_NE(refusal("{\"b\": " + deep + ",\n\"b\": 1}", 6).find("t.json:2: key 'b' appears twice"), std::string::npos);
}

// An object of many keys (compared through a hash set beyond the first few) and the objects nested in it.
TEST(JsonInput, RepeatsAmongManyKeys) {
  std::string many = "{";
  for (int k = 0; k < 40; ++k) many += "\"k" + std::to_string(k) + "\": {\"k" + std::to_string(k) + "\": 1, \"x\": 2},\n";
  EXPECT_EQ(repeated_key_line(many + "\"last\": 0}"), 0);
  EXPECT_EQ(repeated_key_line(many + "\"k3\": 0}"), 41);
  EXPECT_EQ(repeated_key_line(many + "\"k39\": 0}"), 41);
  // A repeat within a nested object after the outer one holds many keys.
  EXPECT_EQ(repeated_key_line(many + "\"in\": {\"a\": 1, \"a\": 2}}"), 41);
}
