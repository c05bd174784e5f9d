//===- InputErrorText.h - Check that code rejects user input ----*- C++ -*-===//
#ifndef DRC_TEST_UNIT_RUNTIME_INPUTERRORTEXT_H
#define DRC_TEST_UNIT_RUNTIME_INPUTERRORTEXT_H

#include "runtime/Error.h"

#include <catch2/catch.hpp>
#include <string>

namespace drc::test {

/// Runs `f`, which must throw drc::InputError, and returns its message so the
/// test can check that it names the file and the problem.
template <typename F> std::string inputErrorText(F &&f) {
  try {
    f();
  } catch (const InputError &error) {
    return error.what();
  }
  FAIL("expected a drc::InputError");
  return {};
}

} // namespace drc::test

#endif // DRC_TEST_UNIT_RUNTIME_INPUTERRORTEXT_H
