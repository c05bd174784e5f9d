//===- JsonTest.cpp - JSON writer and parser ------------------------------===//

#include "runtime/Json.h"

#include "InputErrorText.h"

#include <catch2/catch.hpp>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

using namespace drc;
using drc::test::inputErrorText;

TEST_CASE("values are written compactly and exactly", "[Json]") {
  JsonValue nested = JsonValue::object();
  nested.set("web", 3.5f);
  JsonValue list = JsonValue::array();
  list.push(1);
  list.push(-2);
  JsonValue o = JsonValue::object();
  o.set("step", 500);
  o.set("loss", 2.314f);
  o.set("lr", 0.1);
  o.set("tiny", 1e-8);
  o.set("name", "a \"b\"\\\n\t\x01 é");
  o.set("ok", true);
  o.set("none", nullptr);
  o.set("val", std::move(nested));
  o.set("list", std::move(list));
  o.set("big", int64_t(9007199254740993)); // 2^53 + 1: not a double
  CHECK(toJson(o) == "{\"step\":500,\"loss\":2.314,\"lr\":0.1,\"tiny\":1e-08,"
                     "\"name\":\"a \\\"b\\\"\\\\\\n\\t\\u0001 é\",\"ok\":true,"
                     "\"none\":null,\"val\":{\"web\":3.5},\"list\":[1,-2],"
                     "\"big\":9007199254740993}");
  // set() replaces in place.
  o.set("step", 600);
  CHECK(toJson(o).starts_with("{\"step\":600,\"loss\""));
}

TEST_CASE("a float prints shortest for the float, a double for the double",
          "[Json]") {
  CHECK(toJson(JsonValue(2.314f)) == "2.314");
  CHECK(toJson(JsonValue(double(2.314f))) == "2.313999891281128");
  CHECK(toJson(JsonValue(3.0)) == "3");
  CHECK(toJson(JsonValue(NAN)) == "null");
  CHECK(toJson(JsonValue(-INFINITY)) == "null");
  CHECK(toJson(JsonValue(std::numeric_limits<float>::infinity())) == "null");
  CHECK(toJson(JsonValue(uint64_t(18446744073709551615ull))) ==
        "18446744073709551616");
  CHECK(toJson(JsonValue(-0.0)) == "-0");
  CHECK(std::signbit(parseJson("-0", "t").asDouble()));
}

TEST_CASE("numbers read back to the same bits", "[Json]") {
  uint64_t state = 0x1234567;
  for (int i = 0; i < 2000; ++i) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    double d = std::bit_cast<double>(state);
    float f = std::bit_cast<float>(uint32_t(state >> 32));
    if (std::isfinite(d)) {
      double back = parseJson(toJson(JsonValue(d)), "t").asDouble();
      CHECK(std::bit_cast<uint64_t>(back) == std::bit_cast<uint64_t>(d));
    }
    if (std::isfinite(f)) {
      float back = float(parseJson(toJson(JsonValue(f)), "t").asDouble());
      CHECK(std::bit_cast<uint32_t>(back) == std::bit_cast<uint32_t>(f));
    }
  }
  CHECK(parseJson("9223372036854775807", "t").asInt64() == INT64_MAX);
  CHECK(parseJson("-9223372036854775808", "t").asInt64() == INT64_MIN);
  CHECK(parseJson("3.0", "t").asInt64() == 3);
  CHECK_FALSE(parseJson("3.5", "t").isInt64());
  CHECK_FALSE(parseJson("1e30", "t").isInt64());
  CHECK_THROWS_AS(parseJson("3.5", "t").asInt64(), Error);
  CHECK(parseJson("-0.5e-3", "t").asDouble() == -0.5e-3);
}

TEST_CASE("the parser reads what the writer writes", "[Json]") {
  std::string text =
      "{\"__metadata__\":{\"step\":\"12\"},\"a.b\":{\"dtype\":\"F32\","
      "\"shape\":[2,3],\"data_offsets\":[0,24]},\"s\":\"\\\"\\\\\\n\","
      "\"t\":true,\"f\":false,\"n\":null,\"x\":-1.25e2,\"e\":[],\"o\":{}}";
  JsonValue v = parseJson(text, "t");
  CHECK(toJson(v) ==
        "{\"__metadata__\":{\"step\":\"12\"},\"a.b\":{\"dtype\":\"F32\","
        "\"shape\":[2,3],\"data_offsets\":[0,24]},\"s\":\"\\\"\\\\\\n\","
        "\"t\":true,\"f\":false,\"n\":null,\"x\":-125,\"e\":[],\"o\":{}}");
  CHECK(v.find("a.b")->find("shape")->elements()[1].asInt64() == 3);
  CHECK(v.find("s")->asString() == "\"\\\n");
  CHECK(v.find("n")->isNull());
  CHECK(parseJson(toJson(v), "t") == v);
}

TEST_CASE("string escapes decode to UTF-8", "[Json]") {
  CHECK(parseJson("\"\\u00e9\\u20ac\\ud83d\\ude00\\/\\b\\f\\r\"", "t")
            .asString() == "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80/\b\f\r");
  CHECK(parseJson("  \"caf\xc3\xa9\"\n", "t").asString() == "caf\xc3\xa9");
}

TEST_CASE("malformed JSON is an InputError with line and column", "[Json]") {
  auto errorFor = [](const std::string &text) {
    return inputErrorText([&] { parseJson(text, "m.json"); });
  };
  CHECK(errorFor("{\"a\":1,}") ==
        "m.json:1:8: invalid JSON: expected a member name in double quotes "
        "but found '}'");
  CHECK(errorFor("[1 2]") ==
        "m.json:1:4: invalid JSON: expected ',' or ']' but found '2'");
  CHECK(errorFor("{\"a\" 1}") ==
        "m.json:1:6: invalid JSON: expected ':' but found '1'");
  CHECK(errorFor("{\n  \"a\": x\n}") ==
        "m.json:2:8: invalid JSON: expected a value but found 'x'");
  CHECK(errorFor("\"abc") == "m.json:1:1: invalid JSON: string is not "
                             "terminated");
  CHECK(errorFor("tru") == "m.json:1:1: invalid JSON: expected 'true'");
  CHECK(errorFor("01") ==
        "m.json:1:2: invalid JSON: unexpected text after the JSON value");
  CHECK(errorFor("1.") == "m.json:1:3: invalid JSON: expected a digit after "
                          "'.'");
  CHECK(errorFor("-") == "m.json:1:2: invalid JSON: expected a digit");
  CHECK(errorFor("1e999") ==
        "m.json:1:1: invalid JSON: number 1e999 is out of the range of a "
        "double");
  CHECK(errorFor("{\"a\":1,\"a\":2}") ==
        "m.json:1:8: invalid JSON: duplicate key \"a\"");
  CHECK(errorFor("\"a\x01\"") ==
        "m.json:1:3: invalid JSON: control character in a string; write it "
        "as an escape");
  CHECK(errorFor("\"\\q\"") ==
        "m.json:1:2: invalid JSON: unknown escape in a string");
  CHECK(errorFor("\"\\ud800x\"") ==
        "m.json:1:2: invalid JSON: unpaired high surrogate in \\u escape");
  CHECK(errorFor("\"\\u12g4\"") ==
        "m.json:1:6: invalid JSON: expected four hex digits after \\u");
  CHECK(errorFor("") ==
        "m.json:1:1: invalid JSON: expected a value but the text ended");
  CHECK(errorFor(std::string(300, '[') + std::string(300, ']')) ==
        "m.json:1:258: invalid JSON: nesting deeper than 256");
}

TEST_CASE("accessors check the kind", "[Json]") {
  JsonValue v = parseJson("{\"a\":[1]}", "t");
  CHECK_THROWS_WITH(v.asString(), "JSON value is an object, expected a string");
  CHECK_THROWS_AS(v.find("a")->find("x"), Error);
  CHECK(v.erase("a"));
  CHECK_FALSE(v.erase("a"));
  CHECK(toJson(v) == "{}");
}
