//===- TomlFieldsTest.cpp - TOML written back as text ---------------------===//
#include "runtime/TomlFields.h"

#include <catch2/catch.hpp>

TEST_CASE("a TOML value is written in the fewest digits that read back the "
          "same",
          "[toml]") {
  auto text = [](double v) {
    return drc::tomlValueText(toml::value<double>(v));
  };
  CHECK(text(3e-4) == "0.0003");
  CHECK(text(1e-6) == "1e-06");
  CHECK(text(1.0) == "1.0"); // not "1", an integer
  CHECK(text(0.00033333333333333332) == "0.0003333333333333333");
  for (double v : {3e-4, 1e-6, 1.0, 0.00033333333333333332, 1e17, 2.5e-5}) {
    INFO(text(v));
    toml::table read = drc::parseToml("v = " + text(v), "test.toml");
    REQUIRE(read["v"].is_floating_point());
    CHECK(read["v"].as_floating_point()->get() == v);
  }
  CHECK(drc::tomlValueText(toml::value<int64_t>(12)) == "12");
  CHECK(drc::tomlValueText(toml::value<bool>(true)) == "true");
  std::string quoted =
      drc::tomlValueText(toml::value<std::string>("a \"b\" 'c'"));
  CHECK(
      drc::parseToml("v = " + quoted, "test.toml")["v"].value<std::string>() ==
      "a \"b\" 'c'");
}

TEST_CASE("a TOML table is written as its values, then its tables", "[toml]") {
  toml::table root = drc::parseToml(R"(top = 1
"a key" = 2
[model]
vocab = 256 # a comment
[model.inner]
x = 1e-3
[train]
lr = 3e-4
)",
                                    "test.toml");
  CHECK(drc::tomlText(root) ==
        "'a key' = 2\ntop = 1\n\n[model]\nvocab = 256\n\n"
        "[model.inner]\nx = 0.001\n\n[train]\n"
        "lr = 0.0003\n");
  CHECK(drc::parseToml(drc::tomlText(root), "again.toml") == root);
}
