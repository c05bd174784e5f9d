//===- EditedText.h - A test input with one change ---------------*- C++
//-*-===//
#ifndef DRC_TEST_UNIT_RUNTIME_EDITEDTEXT_H
#define DRC_TEST_UNIT_RUNTIME_EDITEDTEXT_H

#include <catch2/catch.hpp>
#include <string>

namespace drc::test {

/// `text` with the first `from` replaced by `to`; `from` must occur.
inline std::string editedText(std::string text, const std::string &from,
                              const std::string &to) {
  size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

} // namespace drc::test

#endif // DRC_TEST_UNIT_RUNTIME_EDITEDTEXT_H
