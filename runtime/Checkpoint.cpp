//===- Checkpoint.cpp - Save and resume training state --------------------===//

#include "runtime/Checkpoint.h"

#include "runtime/Error.h"
#include "runtime/Safetensors.h"

#include <algorithm>
#include <charconv>
#include <set>
#include <vector>

namespace drc {

namespace {

constexpr std::string_view kFormat = "drc-checkpoint";
constexpr std::string_view kMomentPrefixes[2] = {"optim.m.", "optim.v."};
const char *const kReservedKeys[] = {"format", "format_version", "step", "seed",
                                     "spec_fingerprint"};

/// Lists up to ten names for an error message.
std::string listNames(const std::vector<std::string> &names) {
  std::string text;
  for (size_t i = 0; i < names.size() && i < 10; ++i)
    text += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > 10)
    text += " and " + std::to_string(names.size() - 10) + " more";
  return text;
}

template <typename T> bool parseInteger(const std::string &text, T &value) {
  auto [end, ec] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  return ec == std::errc() && end == text.data() + text.size();
}

/// A buffer and the tensor name each parameter is stored under in it.
struct Destination {
  std::string_view prefix;
  float *buffer;
};

TrainState load(const std::string &path, const ParameterTable &table,
                std::string_view expectedFingerprint,
                const std::vector<Destination> &destinations) {
  SafetensorsFile file(path);
  auto bad = [&](const std::string &what) {
    return InputError("checkpoint " + path + ": " + what);
  };
  const auto &meta = file.metadata();
  auto metaValue = [&](const char *key) -> const std::string & {
    auto it = meta.find(key);
    if (it == meta.end())
      throw bad(std::string("metadata has no '") + key +
                "'; the file is not a drc checkpoint (or was damaged)");
    return it->second;
  };
  if (metaValue("format") != kFormat)
    throw bad("metadata format is '" + metaValue("format") +
              "', not drc-checkpoint; the file is not a drc checkpoint");
  int version;
  if (!parseInteger(metaValue("format_version"), version) ||
      version != kCheckpointFormatVersion)
    throw bad("format version '" + metaValue("format_version") +
              "' is not the one this drc reads (" +
              std::to_string(kCheckpointFormatVersion) +
              "); load it with the drc version that wrote it");

  TrainState state;
  if (!parseInteger(metaValue("step"), state.step) || state.step < 0)
    throw bad("metadata step '" + metaValue("step") +
              "' is not a non-negative integer");
  if (!parseInteger(metaValue("seed"), state.seed))
    throw bad("metadata seed '" + metaValue("seed") +
              "' is not an unsigned 64-bit integer");
  state.specFingerprint = metaValue("spec_fingerprint");
  for (const auto &[key, value] : meta)
    if (std::find(std::begin(kReservedKeys), std::end(kReservedKeys), key) ==
        std::end(kReservedKeys))
      state.extra[key] = value;

  // Every tensor this load fills, and every tensor a checkpoint of this model
  // may hold (a weights-only load tolerates the moments).
  std::vector<std::string> missing;
  std::set<std::string> known;
  for (const ParameterInfo &p : table.parameters()) {
    known.insert(p.name);
    for (std::string_view prefix : kMomentPrefixes)
      known.insert(std::string(prefix) + p.name);
    for (const Destination &d : destinations)
      if (!file.find(std::string(d.prefix) + p.name))
        missing.push_back(std::string(d.prefix) + p.name);
  }
  if (!missing.empty())
    throw bad("tensor" + std::string(missing.size() > 1 ? "s " : " ") +
              listNames(missing) + (missing.size() > 1 ? " are" : " is") +
              " missing; was it written for another model spec?");
  for (const ParameterInfo &p : table.parameters()) {
    for (const Destination &d : destinations) {
      const TensorEntry &t = *file.find(std::string(d.prefix) + p.name);
      if (t.dtype != DType::F32)
        throw bad("tensor '" + t.name + "' has dtype " +
                  std::string(dtypeName(t.dtype)) + " but drc stores F32");
      if (t.shape != p.shape)
        throw bad("tensor '" + t.name + "' has shape " + formatShape(t.shape) +
                  " but the spec expects " + formatShape(p.shape) +
                  "; was it written for another model spec?");
    }
  }
  std::vector<std::string> extra;
  for (const TensorEntry &t : file.tensors())
    if (!known.count(t.name))
      extra.push_back(t.name);
  if (!extra.empty())
    throw bad("holds tensor" + std::string(extra.size() > 1 ? "s " : " ") +
              listNames(extra) +
              " that the model spec does not have; was it written for "
              "another model spec?");
  if (state.specFingerprint != expectedFingerprint)
    throw bad("was written for the model spec with fingerprint '" +
              state.specFingerprint + "' but the compiled model's is '" +
              std::string(expectedFingerprint) +
              "'; use the artifact compiled from the checkpoint's spec, or "
              "start a new run");

  for (const ParameterInfo &p : table.parameters())
    for (const Destination &d : destinations)
      file.read(*file.find(std::string(d.prefix) + p.name),
                d.buffer + p.offset);
  return state;
}

} // namespace

void saveCheckpoint(const std::string &path, const ParameterTable &table,
                    const float *params, const float *m, const float *v,
                    const TrainState &state) {
  std::map<std::string, std::string> meta = state.extra;
  for (const char *key : kReservedKeys)
    if (meta.count(key))
      throw Error("checkpoint metadata key '" + std::string(key) +
                  "' is reserved");
  meta["format"] = kFormat;
  meta["format_version"] = std::to_string(kCheckpointFormatVersion);
  meta["step"] = std::to_string(state.step);
  meta["seed"] = std::to_string(state.seed);
  meta["spec_fingerprint"] = state.specFingerprint;

  std::vector<TensorRef> tensors;
  for (const ParameterInfo &p : table.parameters()) {
    tensors.push_back({p.name, DType::F32, p.shape, params + p.offset});
    tensors.push_back({std::string(kMomentPrefixes[0]) + p.name, DType::F32,
                       p.shape, m + p.offset});
    tensors.push_back({std::string(kMomentPrefixes[1]) + p.name, DType::F32,
                       p.shape, v + p.offset});
  }
  writeSafetensors(path, std::move(tensors), meta);
}

TrainState loadCheckpoint(const std::string &path, const ParameterTable &table,
                          std::string_view expectedFingerprint, float *params,
                          float *m, float *v) {
  return load(path, table, expectedFingerprint,
              {{"", params}, {kMomentPrefixes[0], m}, {kMomentPrefixes[1], v}});
}

TrainState loadCheckpointWeights(const std::string &path,
                                 const ParameterTable &table,
                                 std::string_view expectedFingerprint,
                                 float *params) {
  return load(path, table, expectedFingerprint, {{"", params}});
}

} // namespace drc
