//===- ParameterTableTest.cpp - Parameter layout and manifest text --------===//

#include "runtime/ParameterTable.h"

#include "InputErrorText.h"
#include "PreLnParameters.h"

#include <catch2/catch.hpp>

using namespace drc;
using drc::test::inputErrorText;

TEST_CASE("offsets are aligned to 16 floats", "[ParameterTable]") {
  ParameterTable table;
  CHECK(table.add("a", {3}, Init::zeros(), false).offset == 0);
  CHECK(table.add("b", {5, 7}, Init::ones(), false).offset == 16);
  // 16 + 35 = 51 rounds up to 64.
  CHECK(table.add("c", {}, Init::constant(0.5), true).offset == 64);
  CHECK(table.add("d", {16}, Init::zeros(), false).offset == 80);
  CHECK(table.numElements() == 96);
  CHECK(table.numParameters() == 3 + 35 + 1 + 16);
  CHECK(table.get("c").numElements() == 1);
  CHECK(table.find("b")->shape == std::vector<int64_t>{5, 7});
  CHECK(table.find("nope") == nullptr);
  CHECK_THROWS_AS(table.get("nope"), Error);
}

TEST_CASE("the Pre-LN table has N = L(4d^2 + 3d*dff + 2d) + 2Vd + d",
          "[ParameterTable]") {
  const int64_t V = 256, d = 64, L = 3, dff = 176;
  ParameterTable table = test::preLnParameters(V, d, L, dff);
  CHECK(table.size() == size_t(2 + 9 * L + 1));
  CHECK(table.numParameters() ==
        L * (4 * d * d + 3 * d * dff + 2 * d) + 2 * V * d + d);
  for (const ParameterInfo &p : table.parameters())
    CHECK(p.offset % kParameterAlignment == 0);
  const ParameterInfo &last = table.parameters().back();
  CHECK(table.numElements() == last.offset + last.numElements());
  CHECK(table.get("blocks.2.ffn.w2").shape == std::vector<int64_t>{d, dff});
  CHECK(table.get("blocks.0.attn.norm.gain").decay == false);
  CHECK(table.get("blocks.0.attn.wq").decay == true);
}

TEST_CASE("the manifest text round-trips", "[ParameterTable]") {
  ParameterTable table = test::preLnParameters(32, 64, 1, 176);
  table.add("blocks.0.hc.s_a", {}, Init::constant(0.01), true);
  table.add("blocks.0.hc.alpha", {4, 5}, Init::zeros(), false);
  table.add("blocks.0.hc.a0", {2, 2}, Init::fromValues({1, 0, -0.25f, 1e-7f}),
            false);
  std::string text = table.toText();
  CHECK(text.starts_with(
      "param embed.weight shape=32x64 offset=0 "
      "init=trunc_normal(0.02,0.06) decay=1\n"
      "param blocks.0.attn.norm.gain shape=64 offset=2048 init=constant(1) "
      "decay=0\n"));
  CHECK(text.find("param blocks.0.hc.s_a shape=scalar offset=") !=
        std::string::npos);
  CHECK(text.find(" init=constant(0.01) decay=1\n") != std::string::npos);
  CHECK(text.find(" init=values(1,0,-0.25,1") != std::string::npos);

  ParameterTable parsed = ParameterTable::parse(text, "m.txt");
  REQUIRE(parsed.size() == table.size());
  for (size_t i = 0; i < table.size(); ++i) {
    const ParameterInfo &a = table.parameters()[i], &b = parsed.parameters()[i];
    CHECK(a.name == b.name);
    CHECK(a.shape == b.shape);
    CHECK(a.offset == b.offset);
    CHECK(a.init == b.init);
    CHECK(a.decay == b.decay);
  }
  CHECK(parsed.numElements() == table.numElements());
  CHECK(parsed.toText() == text);
}

TEST_CASE("the parser skips comments and blank lines, accepts any field "
          "order and tabs",
          "[ParameterTable]") {
  ParameterTable t = ParameterTable::parse(
      "# parameters\n\n"
      "param x\tdecay=0 init=zeros offset=0 shape=2x3\r\n"
      "  # indented comment\n"
      "param y shape=4 offset=16 init=trunc_normal(1e-2,3e-2) decay=1\n",
      "m.txt");
  REQUIRE(t.size() == 2);
  CHECK(t.get("x").shape == std::vector<int64_t>{2, 3});
  CHECK(t.get("y").init == Init::truncNormal(0.01, 0.03));
}

TEST_CASE("bad manifest lines are InputErrors naming file:line",
          "[ParameterTable]") {
  auto errorFor = [](const std::string &line) {
    return inputErrorText([&] {
      ParameterTable::parse("param ok shape=1 offset=0 init=zeros decay=0\n\n" +
                                line + "\n",
                            "model.manifest");
    });
  };
  CHECK(errorFor("parm x shape=4 offset=16 init=zeros decay=0") ==
        "model.manifest:3: expected 'param <name> shape=... offset=... "
        "init=... decay=0|1', got 'parm x shape=4 offset=16 init=zeros "
        "decay=0'");
  CHECK(errorFor("param x shape=4 offset=16 init=zeros") ==
        "model.manifest:3: parameter 'x': missing field 'decay='");
  CHECK(errorFor("param x shape=4 offset=16 init=zeros dekay=1") ==
        "model.manifest:3: parameter 'x': unknown field 'dekay=1' (expected "
        "shape=, offset=, init=, decay=)");
  CHECK(errorFor("param x shape=4 shape=4 offset=16 init=zeros decay=1") ==
        "model.manifest:3: parameter 'x': field 'shape' given twice");
  CHECK(errorFor("param x shape=4x offset=16 init=zeros decay=1") ==
        "model.manifest:3: parameter 'x': bad shape '4x' (expected e.g. "
        "64x64 or scalar)");
  CHECK(errorFor("param x shape=4 offset=16 init=trunc_normal(0.02) "
                 "decay=1") ==
        "model.manifest:3: parameter 'x': bad init 'trunc_normal(0.02)' "
        "(expected trunc_normal(std,clip), constant(v), zeros or values(...))");
  CHECK(errorFor("param x shape=4 offset=16 init=zeros decay=yes") ==
        "model.manifest:3: parameter 'x': bad decay 'yes' (expected 0 or 1)");
  CHECK(errorFor("param x shape=4 offset=8 init=zeros decay=1") ==
        "model.manifest:3: parameter 'x' has offset=8 but the layout rule "
        "places it at 16; the manifest was written by an incompatible "
        "drc-compile, recompile the model");
  CHECK(errorFor("param ok shape=4 offset=16 init=zeros decay=1") ==
        "model.manifest:3: parameter 'ok' is declared twice");
  CHECK(errorFor("param x shape=0x4 offset=16 init=zeros decay=1") ==
        "model.manifest:3: parameter 'x' has shape [0, 4]; every dimension "
        "must be between 1 and 2^40");
  CHECK(errorFor("param x/y shape=4 offset=16 init=zeros decay=1") ==
        "model.manifest:3: parameter name 'x/y' may use only letters, "
        "digits, '_', '.' and '-'");
  CHECK(errorFor("param optim.m.x shape=4 offset=16 init=zeros decay=1") ==
        "model.manifest:3: parameter name 'optim.m.x' is reserved for "
        "checkpoint bookkeeping; rename it");
  CHECK(errorFor("param x shape=4 offset=16 init=trunc_normal(0.02,0.001) "
                 "decay=1") ==
        "model.manifest:3: parameter 'x' has init "
        "trunc_normal(0.02,0.001); std must be positive and clip at least "
        "std/2");
}

TEST_CASE("values() must match the shape", "[ParameterTable]") {
  ParameterTable t;
  CHECK_THROWS_WITH(t.add("a0", {2, 2}, Init::fromValues({1, 0, 1}), false),
                    "parameter 'a0' has shape [2, 2] but 3 initial values, "
                    "or a non-finite one");
}

TEST_CASE("a failed parseLine leaves the table unchanged", "[ParameterTable]") {
  ParameterTable table;
  table.add("a", {3}, Init::zeros(), false);
  CHECK_THROWS_AS(
      table.parseLine("param b shape=4 offset=0 init=zeros decay=0", "f:1"),
      InputError);
  CHECK(table.size() == 1);
  CHECK(table.numElements() == 16);
  table.parseLine("param b shape=4 offset=16 init=zeros decay=0", "f:2");
  CHECK(table.numElements() == 32);
}
