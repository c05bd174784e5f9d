//===- ParameterTable.h - The model's parameters and layout -----*- C++ -*-===//
//
// The compiler hands the runtime one table: every parameter's name, shape,
// initialiser and weight-decay group, and where it lives in the single flat
// fp32 parameter buffer (gradients and AdamW moments use the same layout).
// The table also travels inside a compiled artifact's manifest as text, one
// `param` line per parameter.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_PARAMETERTABLE_H
#define DRC_RUNTIME_PARAMETERTABLE_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace drc {

/// How a parameter's values are set before the first step.
struct Init {
  enum class Kind {
    /// Normal(0, stddev), values outside [-clip, clip] redrawn.
    TruncNormal,
    /// Every value equals `value` (gains: Constant 1).
    Constant,
    /// Every value is 0.
    Zeros,
    /// Given values, row-major (static residual coefficients such as HC's
    /// A0, which depend on the sublayer).
    Values,
  };
  Kind kind = Kind::Zeros;
  double stddev = 0;         ///< TruncNormal only
  double clip = 0;           ///< TruncNormal only
  double value = 0;          ///< Constant only
  std::vector<float> values; ///< Values only

  static Init truncNormal(double stddev, double clip) {
    return {Kind::TruncNormal, stddev, clip, 0, {}};
  }
  static Init constant(double value) {
    return {Kind::Constant, 0, 0, value, {}};
  }
  static Init zeros() { return {Kind::Zeros, 0, 0, 0, {}}; }
  static Init ones() { return constant(1); }
  static Init fromValues(std::vector<float> values) {
    return {Kind::Values, 0, 0, 0, std::move(values)};
  }

  bool operator==(const Init &) const = default;
};

/// The text form used in manifests: `trunc_normal(0.02,0.06)`,
/// `constant(1)`, `zeros` or `values(1,0,...)`.
std::string toString(const Init &init);

/// One parameter: a dense fp32 tensor, row-major, at `offset` floats into the
/// flat parameter buffer.
struct ParameterInfo {
  std::string name;
  std::vector<int64_t> shape; ///< empty for a scalar
  int64_t offset = 0;         ///< in floats; a multiple of kParameterAlignment
  Init init;
  bool decay = false; ///< in the AdamW weight-decay group

  /// Product of the shape (1 for a scalar).
  int64_t numElements() const;
};

/// Every parameter starts on a 64-byte boundary so that vectorised kernels and
/// cp.async/TMA loads never straddle a cache line at a parameter's start.
inline constexpr int64_t kParameterAlignment = 16;

/// "64x64", or "scalar" for rank 0.
std::string formatShapeText(const std::vector<int64_t> &shape);
/// "[64, 64]", as in error messages.
std::string formatShape(const std::vector<int64_t> &shape);

/// The ordered list of parameters and the size of the buffer that holds them.
class ParameterTable {
public:
  /// Appends a parameter at the next aligned offset and returns it. Throws
  /// InputError for a duplicate, reserved or malformed name, a dimension < 1,
  /// more than 2^40 elements, or a TruncNormal whose std is not positive or
  /// whose clip is below std/2.
  const ParameterInfo &add(std::string name, std::vector<int64_t> shape,
                           Init init, bool decay);

  /// The parameter called `name`, or null.
  const ParameterInfo *find(std::string_view name) const;
  /// The parameter called `name`; throws drc::Error if there is none.
  const ParameterInfo &get(std::string_view name) const;

  /// In the order they were added (= increasing offset).
  const std::vector<ParameterInfo> &parameters() const { return params; }
  size_t size() const { return params.size(); }

  /// Floats in the flat buffer, including alignment padding: the size to
  /// allocate for parameters, gradients and each AdamW moment.
  int64_t numElements() const { return total; }
  /// Sum of the parameters' element counts, without padding: the model's N.
  int64_t numParameters() const;

  /// The manifest text: one line per parameter, e.g.
  ///   param blocks.0.attn.wq shape=64x64 offset=0
  ///         init=trunc_normal(0.02,0.06) decay=1
  /// (on one line).
  std::string toText() const;

  /// Parses one `param` line (as written by toText) and appends the
  /// parameter. `location` ("file:line") prefixes every error. The written
  /// offset must equal the one this table assigns: the layout rule lives here,
  /// and a manifest that disagrees was written by an incompatible compiler.
  void parseLine(std::string_view line, const std::string &location);

  /// Parses a whole table: `param` lines; blank lines and lines starting with
  /// `#` are skipped. Errors are InputError("file:line: ...").
  static ParameterTable parse(std::string_view text,
                              const std::string &fileName);

private:
  std::vector<ParameterInfo> params;
  int64_t total = 0;
};

} // namespace drc

#endif // DRC_RUNTIME_PARAMETERTABLE_H
