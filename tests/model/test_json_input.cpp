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
