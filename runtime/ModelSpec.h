//===- ModelSpec.h - A model's .toml spec -----------------------*- C++ -*-===//
//
// The model spec is what a user writes to choose a backbone shape, a residual
// scheme and a training recipe (docs/spec.md). Parsing is strict: an unknown,
// misspelt or mistyped key is an InputError naming file:line, so a typo never
// silently falls back to a default.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_MODELSPEC_H
#define DRC_RUNTIME_MODELSPEC_H

#include <cstdint>
#include <string>
#include <vector>

namespace drc {

/// Backbone shape (ARCHITECTURES.md §1.1).
struct ModelShape {
  int64_t vocab = 256;
  int64_t dModel = 0;
  int64_t nLayer = 0;
  int64_t nHead = 0;
  int64_t dFF = 0; ///< 16·ceil(8d/48) unless the spec sets it
  int64_t seqLen = 0;
  double normEps = 1e-6;
  double ropeTheta = 10000.0;
};

/// A value set for a scheme option in `[residual]` (docs/spec.md).
struct SchemeOption {
  enum class Kind { Integer, Number, Boolean };
  std::string name;
  Kind kind = Kind::Integer;
  int64_t integer = 0; ///< Integer and Boolean (0/1)
  double number = 0;   ///< Number
  std::string where;   ///< "spec.toml:line:col", for messages
};

/// The residual topology and its options: a library scheme by name
/// (schemeLibraryDirectory()/NAME.mlir) or a user's scheme file, plus values
/// for the options the scheme declares. Options are checked against the
/// scheme when it is instantiated.
struct ResidualSpec {
  std::string scheme = "preln"; ///< empty for a user's scheme_file
  std::string schemeFile;       ///< the file either way, resolved
  std::string schemeWhere;      ///< where scheme or scheme_file was set
  std::vector<SchemeOption> options;
};

/// The training recipe (ARCHITECTURES.md §1.3-1.4).
struct TrainSpec {
  int64_t batch = 0;
  int64_t steps = 0;
  double lr = 0;
  double warmupFraction = 0.1;
  double finalLrFraction = 0.1;
  double weightDecay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double adamEps = 1e-8;
  double gradClip = 1.0;
  double initStd = 0.02;
  int64_t evalEvery = 100;
  int64_t evalTokens = 65536; ///< per validation domain
  uint64_t seed = 1;
};

/// A parsed, validated model spec.
struct ModelSpec {
  std::string path;
  std::string text; ///< the TOML it was read from
  ModelShape model;
  ResidualSpec residual;
  TrainSpec train;

  /// Tokens per training step.
  int64_t tokensPerStep() const { return train.batch * model.seqLen; }
};

/// Where library schemes live: $DRC_SCHEMES, or the source tree's
/// models/schemes.
std::string schemeLibraryDirectory();

/// The library file of scheme `name`, or an InputError located at `at`
/// ("path:line:col") naming the key `what` and listing the library.
std::string librarySchemeFile(const std::string &at, const std::string &name,
                              const std::string &what = "[residual] scheme");

/// A user's scheme file `value`, set by the key `what` at `at` in `file` (a
/// "spec" or "grid", its `fileKind`): relative paths are relative to that
/// file. Throws an InputError saying where it looked when it is missing.
std::string userSchemeFile(const std::string &at, const std::string &value,
                           const std::string &file, const std::string &what,
                           const std::string &fileKind);

/// The default FFN width of ARCHITECTURES.md: 8d/3 rounded up to 16.
int64_t defaultFFNWidth(int64_t dModel);

/// Parses and validates the spec at `path`; throws InputError
/// ("path:line:col: ...") on anything wrong.
ModelSpec loadModelSpec(const std::string &path);

/// Parses spec text (for tests); `path` is used in messages only.
ModelSpec parseModelSpec(const std::string &text, const std::string &path);

/// The spec of a run of `spec` for `steps` steps from seed `seed`, as a
/// run directory keeps it (spec.toml): its tables with [train] steps and
/// seed the run's and a scheme_file made absolute, so it reads the same
/// from anywhere. Comments are not kept.
std::string runSpecText(const ModelSpec &spec, int64_t steps, uint64_t seed);

/// Where a spec recorded by an earlier run (a run directory's spec.toml, a
/// sweep's result record) and the one a command gives now differ, both
/// TOML text: the first key, by table and name, that one sets and the
/// other does not or sets to another value, as "[train] lr = 0.001, but
/// this command gives 0.002" (a message puts "the run has " before it);
/// empty where they agree. Comments and how a value is written do not
/// count. `recordedPath` names `recorded` in syntax errors.
std::string specDifference(const std::string &recorded,
                           const std::string &recordedPath,
                           const std::string &given);

/// A stable fingerprint of everything that determines the parameter table
/// and the compiled program (not the schedule), stored in checkpoints. A
/// user's scheme file counts by its absolute path, wherever the spec names
/// it from.
std::string modelFingerprint(const ModelSpec &spec);

/// modelFingerprint plus what else a compiled program fixes: tokens per
/// step and the optimizer's constants. Recorded in compiled artifacts
/// (drc-compile --target=cuda) and checked against the spec that runs them.
std::string programFingerprint(const ModelSpec &spec);

} // namespace drc

#endif // DRC_RUNTIME_MODELSPEC_H
