//===- Safetensors.h - Read and write .safetensors files --------*- C++ -*-===//
//
// The safetensors format (huggingface/safetensors): an 8-byte little-endian
// header length N, N bytes of JSON header, then the raw tensor data. The
// header maps each tensor name to {"dtype", "shape", "data_offsets": [begin,
// end)} (byte offsets into the data section) and "__metadata__" to a
// string->string map. drc writes the data back to back, wider dtypes first
// and then by name (as the reference implementation does; all-F32 checkpoints
// are thus in name order), pads the header with spaces to a multiple of 8
// bytes, and replaces the file atomically. Reading validates everything a
// truncated or foreign file could get wrong before a single byte of data is
// trusted.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_SAFETENSORS_H
#define DRC_RUNTIME_SAFETENSORS_H

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace drc {

/// Element types drc reads and writes (little-endian, as the format requires).
enum class DType { F32, F64, I32, I64 };

/// "F32", "F64", "I32", "I64".
std::string_view dtypeName(DType dtype);
/// Bytes per element.
size_t dtypeSize(DType dtype);

/// A tensor to write: `data` holds product(shape) * dtypeSize(dtype) bytes,
/// row-major.
struct TensorRef {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  const void *data;
};

/// Writes `tensors` (in any order) and `metadata` to
/// `path` atomically: a crash at any point leaves the old file or the new one.
/// Throws InputError for an unusable path (missing directory, no
/// permission), drc::Error for other I/O failures and for duplicate or
/// reserved tensor names.
void writeSafetensors(const std::string &path, std::vector<TensorRef> tensors,
                      const std::map<std::string, std::string> &metadata);

/// A tensor found in a file.
struct TensorEntry {
  std::string name;
  DType dtype;
  std::vector<int64_t> shape;
  uint64_t begin; ///< byte offset of the first element in the data section
  uint64_t end;   ///< one past the last byte

  int64_t numElements() const;
  uint64_t byteSize() const { return end - begin; }
};

/// An open, validated safetensors file. Data is read on demand, straight into
/// the caller's buffer, so loading a multi-GB checkpoint needs no second copy.
class SafetensorsFile {
public:
  /// Opens `path` and validates the header: readable JSON, known dtypes,
  /// shapes that match their byte ranges, ranges that tile the data section
  /// exactly (no gap, no overlap, nothing past the end of the file), string
  /// metadata. Every failure is an InputError naming the file.
  explicit SafetensorsFile(const std::string &path);
  ~SafetensorsFile();
  SafetensorsFile(SafetensorsFile &&other) noexcept;
  SafetensorsFile &operator=(SafetensorsFile &&other) noexcept;
  SafetensorsFile(const SafetensorsFile &) = delete;
  SafetensorsFile &operator=(const SafetensorsFile &) = delete;

  const std::string &path() const { return path_; }
  /// Sorted by name.
  const std::vector<TensorEntry> &tensors() const { return tensors_; }
  /// The tensor called `name`, or null.
  const TensorEntry *find(std::string_view name) const;
  const std::map<std::string, std::string> &metadata() const {
    return metadata_;
  }

  /// Copies the tensor's byteSize() bytes into `dst`. Throws drc::Error if
  /// the file changed underneath (shorter than when it was opened).
  void read(const TensorEntry &tensor, void *dst) const;

private:
  void load();

  std::string path_;
  int fd = -1;
  uint64_t dataStart = 0;
  std::vector<TensorEntry> tensors_;
  std::map<std::string, std::string> metadata_;
};

} // namespace drc

#endif // DRC_RUNTIME_SAFETENSORS_H
