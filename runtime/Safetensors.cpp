//===- Safetensors.cpp - Read and write .safetensors files ----------------===//

#include "runtime/Safetensors.h"

#include "runtime/AtomicFile.h"
#include "runtime/Error.h"
#include "runtime/Json.h"
#include "runtime/ParameterTable.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <utility>

namespace drc {

// The format is little-endian and drc copies bytes without swapping.
static_assert(std::endian::native == std::endian::little,
              "drc's safetensors I/O assumes a little-endian host");

namespace {

/// The reference implementation refuses larger headers; so do we, so that a
/// corrupt length cannot make us allocate gigabytes.
constexpr uint64_t kMaxHeaderSize = 100'000'000;

/// Keeps element counts and byte sizes far from uint64 overflow.
constexpr int64_t kMaxElements = int64_t(1) << 48;

bool parseDType(std::string_view name, DType &dtype) {
  for (DType d : {DType::F32, DType::F64, DType::I32, DType::I64})
    if (dtypeName(d) == name) {
      dtype = d;
      return true;
    }
  return false;
}

} // namespace

std::string_view dtypeName(DType dtype) {
  switch (dtype) {
  case DType::F32:
    return "F32";
  case DType::F64:
    return "F64";
  case DType::I32:
    return "I32";
  case DType::I64:
    return "I64";
  }
  throw Error("unknown DType");
}

size_t dtypeSize(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::I32:
    return 4;
  case DType::F64:
  case DType::I64:
    return 8;
  }
  throw Error("unknown DType");
}

int64_t TensorEntry::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

void writeSafetensors(const std::string &path, std::vector<TensorRef> tensors,
                      const std::map<std::string, std::string> &metadata) {
  // As the reference writer does: wider dtypes first, so that with the
  // 8-byte-aligned header every tensor starts aligned to its element size and
  // readers can view mapped data in place; then by name.
  std::sort(tensors.begin(), tensors.end(),
            [](const TensorRef &a, const TensorRef &b) {
              size_t sa = dtypeSize(a.dtype), sb = dtypeSize(b.dtype);
              return sa != sb ? sa > sb : a.name < b.name;
            });

  JsonValue header = JsonValue::object();
  if (!metadata.empty()) {
    JsonValue meta = JsonValue::object();
    for (const auto &[key, value] : metadata)
      meta.set(key, value);
    header.set("__metadata__", std::move(meta));
  }
  std::vector<uint64_t> sizes;
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorRef &t = tensors[i];
    if (t.name.empty() || t.name == "__metadata__" || header.find(t.name))
      throw Error("safetensors " + path + ": tensor name '" + t.name +
                  "' is empty, reserved or duplicated");
    JsonValue shape = JsonValue::array();
    uint64_t n = 1;
    for (int64_t d : t.shape) {
      if (d < 0)
        throw Error("safetensors " + path + ": tensor '" + t.name +
                    "' has negative dimension " + std::to_string(d));
      shape.push(d);
      n *= uint64_t(d);
    }
    uint64_t size = n * dtypeSize(t.dtype);
    JsonValue entry = JsonValue::object();
    entry.set("dtype", dtypeName(t.dtype));
    entry.set("shape", std::move(shape));
    JsonValue offsets = JsonValue::array();
    offsets.push(offset);
    offsets.push(offset + size);
    entry.set("data_offsets", std::move(offsets));
    header.set(t.name, std::move(entry));
    sizes.push_back(size);
    offset += size;
  }

  std::string text = toJson(header);
  text.append((8 - text.size() % 8) % 8, ' ');
  unsigned char length[8];
  for (int i = 0; i < 8; ++i)
    length[i] = uint8_t(uint64_t(text.size()) >> (8 * i));

  AtomicFileWriter out(path);
  out.write(length, sizeof length);
  out.write(text.data(), text.size());
  for (size_t i = 0; i < tensors.size(); ++i)
    out.write(tensors[i].data, sizes[i]);
  out.commit();
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

/// Reads exactly `size` bytes at `offset`; false if the file ends first.
bool readAt(int fd, void *dst, uint64_t size, uint64_t offset,
            const std::string &path) {
  char *bytes = static_cast<char *>(dst);
  while (size > 0) {
    // Linux transfers at most ~2 GiB per call.
    size_t chunk = size_t(std::min<uint64_t>(size, uint64_t(1) << 30));
    ssize_t n = ::pread(fd, bytes, chunk, off_t(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      throwFileError("read", path, errno);
    if (n == 0)
      return false;
    bytes += n;
    size -= uint64_t(n);
    offset += uint64_t(n);
  }
  return true;
}

} // namespace

SafetensorsFile::SafetensorsFile(const std::string &path) : path_(path) {
  try {
    load();
  } catch (...) {
    if (fd >= 0)
      ::close(fd);
    throw;
  }
}

void SafetensorsFile::load() {
  const std::string &path = path_;
  auto bad = [&](const std::string &what) {
    return InputError("safetensors file " + path + ": " + what);
  };
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throwFileError("open", path, errno);
  struct stat st;
  if (::fstat(fd, &st) != 0)
    throwFileError("stat", path, errno);
  uint64_t fileSize = uint64_t(st.st_size);

  unsigned char length[8];
  if (fileSize < 8 || !readAt(fd, length, 8, 0, path))
    throw bad("file is " + std::to_string(fileSize) +
              " bytes, too short for the 8-byte header length; it is "
              "truncated or not a safetensors file");
  uint64_t headerSize = 0;
  for (int i = 0; i < 8; ++i)
    headerSize |= uint64_t(length[i]) << (8 * i);
  if (headerSize > kMaxHeaderSize)
    throw bad("header length " + std::to_string(headerSize) +
              " exceeds the format's limit of 100000000 bytes; this is not a "
              "safetensors file");
  if (8 + headerSize > fileSize)
    throw bad("header length " + std::to_string(headerSize) +
              " runs past the end of the " + std::to_string(fileSize) +
              "-byte file; the file is truncated");
  std::string text(headerSize, '\0');
  if (!readAt(fd, text.data(), headerSize, 8, path))
    throw bad("file shrank while being read");
  dataStart = 8 + headerSize;
  uint64_t dataSize = fileSize - dataStart;

  JsonValue header = parseJson(text, path + " (safetensors header)");
  if (!header.isObject())
    throw bad("header is not a JSON object");
  for (const auto &[name, entry] : header.members()) {
    if (name == "__metadata__") {
      if (!entry.isObject())
        throw bad("__metadata__ is not an object of strings");
      for (const auto &[key, value] : entry.members()) {
        if (!value.isString())
          throw bad("__metadata__ value of '" + key +
                    "' is not a string (the format allows only strings)");
        metadata_[key] = value.asString();
      }
      continue;
    }
    std::string where = "tensor '" + name + "'";
    if (!entry.isObject())
      throw bad(where + " is not described by an object");
    for (const auto &member : entry.members())
      if (member.first != "dtype" && member.first != "shape" &&
          member.first != "data_offsets")
        throw bad(where + " has unknown field '" + member.first + "'");
    const JsonValue *dtype = entry.find("dtype");
    const JsonValue *shape = entry.find("shape");
    const JsonValue *offsets = entry.find("data_offsets");
    if (!dtype || !shape || !offsets)
      throw bad(where + " lacks one of dtype, shape, data_offsets");

    TensorEntry t;
    t.name = name;
    if (!dtype->isString() || !parseDType(dtype->asString(), t.dtype))
      throw bad(where + " has dtype " + toJson(*dtype) +
                ", which drc does not read (it reads F32, F64, I32, I64)");
    if (!shape->isArray())
      throw bad(where + " has a shape that is not an array");
    int64_t n = 1;
    for (const JsonValue &d : shape->elements()) {
      if (!d.isInt64() || d.asInt64() < 0)
        throw bad(where + " has shape " + toJson(*shape) +
                  "; dimensions must be non-negative integers");
      t.shape.push_back(d.asInt64());
      if (d.asInt64() > 0 && n > kMaxElements / d.asInt64())
        throw bad(where + " has shape " + toJson(*shape) +
                  ", too many elements");
      n *= d.asInt64();
    }
    if (!offsets->isArray() || offsets->elements().size() != 2 ||
        !offsets->elements()[0].isInt64() ||
        !offsets->elements()[1].isInt64() ||
        offsets->elements()[0].asInt64() < 0 ||
        offsets->elements()[1].asInt64() < offsets->elements()[0].asInt64())
      throw bad(where + " has data_offsets " + toJson(*offsets) +
                "; expected [begin, end] with 0 <= begin <= end");
    t.begin = uint64_t(offsets->elements()[0].asInt64());
    t.end = uint64_t(offsets->elements()[1].asInt64());
    if (t.byteSize() != uint64_t(n) * dtypeSize(t.dtype))
      throw bad(where + " spans " + std::to_string(t.byteSize()) +
                " bytes but its shape " + formatShape(t.shape) + " of " +
                std::string(dtypeName(t.dtype)) + " needs " +
                std::to_string(uint64_t(n) * dtypeSize(t.dtype)));
    tensors_.push_back(std::move(t));
  }

  // The byte ranges must tile the data section exactly; anything else means
  // a corrupt header, two tensors sharing bytes, or a cut-off file.
  std::vector<const TensorEntry *> byOffset;
  for (const TensorEntry &t : tensors_)
    byOffset.push_back(&t);
  std::sort(byOffset.begin(), byOffset.end(),
            [](const TensorEntry *a, const TensorEntry *b) {
              return a->begin != b->begin ? a->begin < b->begin
                                          : a->end < b->end;
            });
  uint64_t expected = 0;
  for (const TensorEntry *t : byOffset) {
    if (t->begin < expected)
      throw bad("tensor '" + t->name + "' (bytes " + std::to_string(t->begin) +
                ".." + std::to_string(t->end) +
                ") overlaps the tensor before it");
    if (t->begin > expected)
      throw bad("bytes " + std::to_string(expected) + ".." +
                std::to_string(t->begin) +
                " of the data section belong to no tensor");
    expected = t->end;
  }
  if (expected > dataSize)
    throw bad("the data section should hold " + std::to_string(expected) +
              " bytes but the file has only " + std::to_string(dataSize) +
              " after the header; the file is truncated (an interrupted "
              "copy?)");
  if (expected < dataSize)
    throw bad(std::to_string(dataSize - expected) +
              " bytes after the last tensor belong to no tensor");

  std::sort(tensors_.begin(), tensors_.end(),
            [](const TensorEntry &a, const TensorEntry &b) {
              return a.name < b.name;
            });
}

SafetensorsFile::~SafetensorsFile() {
  if (fd >= 0)
    ::close(fd);
}

SafetensorsFile::SafetensorsFile(SafetensorsFile &&other) noexcept
    : path_(std::move(other.path_)), fd(other.fd), dataStart(other.dataStart),
      tensors_(std::move(other.tensors_)),
      metadata_(std::move(other.metadata_)) {
  other.fd = -1;
}

SafetensorsFile &SafetensorsFile::operator=(SafetensorsFile &&other) noexcept {
  std::swap(path_, other.path_);
  std::swap(fd, other.fd);
  std::swap(dataStart, other.dataStart);
  std::swap(tensors_, other.tensors_);
  std::swap(metadata_, other.metadata_);
  return *this;
}

const TensorEntry *SafetensorsFile::find(std::string_view name) const {
  auto it = std::lower_bound(
      tensors_.begin(), tensors_.end(), name,
      [](const TensorEntry &t, std::string_view n) { return t.name < n; });
  return it != tensors_.end() && it->name == name ? &*it : nullptr;
}

void SafetensorsFile::read(const TensorEntry &tensor, void *dst) const {
  if (!readAt(fd, dst, tensor.byteSize(), dataStart + tensor.begin, path_))
    throw Error("safetensors file " + path_ + " became shorter while tensor '" +
                tensor.name + "' was read; was it overwritten in place?");
}

} // namespace drc
