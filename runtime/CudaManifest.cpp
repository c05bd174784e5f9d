//===- CudaManifest.cpp - What a GPU program launches, and how -----------===//
#include "runtime/CudaManifest.h"

#include "runtime/CudaGemm.h"
#include "runtime/Error.h"
#include "runtime/Json.h"
#include "runtime/TomlFields.h"

#include <cstring>
#include <limits>

namespace drc {
namespace {

/// Reads one manifest, naming it and the place in every error.
class Reader {
public:
  explicit Reader(std::string file) : file(std::move(file)) {}

  [[noreturn]] void fail(const std::string &where,
                         const std::string &what) const {
    throw InputError(file + ": " + where + ": " + what +
                     " (rebuild it with drc-compile --target=cuda)");
  }

  const JsonValue &member(const JsonValue &object, const char *key,
                          const std::string &where) const {
    const JsonValue *v = object.isObject() ? object.find(key) : nullptr;
    if (!v)
      fail(where, std::string("missing \"") + key + "\"");
    return *v;
  }

  int64_t integer(const JsonValue &object, const char *key,
                  const std::string &where) const {
    const JsonValue &v = member(object, key, where);
    if (!v.isNumber() || !v.isInt64())
      fail(where, std::string("\"") + key + "\" must be an integer");
    return v.asInt64();
  }

  std::vector<int64_t> integers(const JsonValue &object, const char *key,
                                const std::string &where) const {
    const JsonValue &v = member(object, key, where);
    std::vector<int64_t> out;
    if (!v.isArray())
      fail(where, std::string("\"") + key + "\" must be a list of integers");
    for (const JsonValue &x : v.elements()) {
      if (!x.isNumber() || !x.isInt64())
        fail(where, std::string("\"") + key + "\" must be a list of integers");
      out.push_back(x.asInt64());
    }
    return out;
  }

  const std::vector<JsonValue> &list(const JsonValue &object, const char *key,
                                     const std::string &where) const {
    const JsonValue &v = member(object, key, where);
    if (!v.isArray())
      fail(where, std::string("\"") + key + "\" must be a list");
    return v.elements();
  }

  std::string string(const JsonValue &object, const char *key,
                     const std::string &where) const {
    const JsonValue &v = member(object, key, where);
    if (!v.isString())
      fail(where, std::string("\"") + key + "\" must be a string");
    return v.asString();
  }

  CudaType type(const std::string &name, const std::string &where) const {
    if (name == "f32")
      return CudaType::F32;
    if (name == "i32")
      return CudaType::I32;
    if (name == "i64")
      return CudaType::I64;
    if (name == "f64")
      return CudaType::F64;
    if (name == "i8")
      return CudaType::I8;
    fail(where, "unknown type '" + name + "'");
  }

  CudaOperand operand(const JsonValue &o, const std::string &where) const {
    CudaOperand out;
    if (o.isObject() && o.find("buffer")) {
      out.isView = true;
      out.buffer = integer(o, "buffer", where);
      out.type = type(string(o, "dtype", where), where);
      out.offset = integer(o, "offset", where);
      out.sizes = integers(o, "sizes", where);
      out.strides = integers(o, "strides", where);
      if (out.sizes.size() != out.strides.size())
        fail(where, "sizes and strides differ in rank");
      return out;
    }
    if (!o.isObject() || o.members().size() != 1)
      fail(where, "an operand is a view {\"buffer\", ...} or one scalar "
                  "{\"f32\": x}");
    const auto &[name, value] = o.members().front();
    out.type = type(name, where);
    bool real = out.type == CudaType::F32 || out.type == CudaType::F64;
    if (real && value.isString() &&
        (value.asString() == "inf" || value.asString() == "-inf" ||
         value.asString() == "nan"))
      out.real = value.asString() == "nan"
                     ? std::numeric_limits<double>::quiet_NaN()
                     : (value.asString() == "inf" ? 1 : -1) *
                           std::numeric_limits<double>::infinity();
    else if (!value.isNumber())
      fail(where, "a scalar operand must be a number (or \"inf\", "
                  "\"-inf\", \"nan\")");
    else if (real)
      out.real = value.asDouble();
    else if (value.isInt64())
      out.integer = value.asInt64();
    else
      fail(where, "an integer scalar must be an integer");
    return out;
  }

  /// A gemm's matrix `key`: an f32 view [batch, rows, cols].
  CudaOperand view(const JsonValue &gemm, const char *key,
                   const std::string &where) const {
    CudaOperand v = operand(member(gemm, key, where), where);
    if (!v.isView || v.type != CudaType::F32 || v.sizes.size() != 3)
      fail(where, std::string(key) + " must be an f32 view of rank 3");
    return v;
  }

  CudaFunction function(const JsonValue &f, const std::string &name) const {
    CudaFunction out;
    std::vector<int64_t> bufferBytes;
    for (const JsonValue &a : list(f, "arguments", name)) {
      int64_t elements = 1;
      for (int64_t d : integers(a, "shape", name))
        elements *= d;
      CudaType t = type(string(a, "dtype", name), name);
      out.arguments.emplace_back(elements, t);
      bufferBytes.push_back(elements * cudaTypeBytes(t));
    }
    out.arenaBytes = integer(f, "arena_bytes", name);
    for (const JsonValue &b : list(f, "buffers", name)) {
      CudaBuffer buffer;
      buffer.index = integer(b, "buffer", name);
      buffer.bytes = integer(b, "bytes", name);
      if (buffer.index != int64_t(bufferBytes.size()) || buffer.bytes < 0)
        fail(name, "buffer " + std::to_string(buffer.index) +
                       " is out of order or has a negative size");
      if (const JsonValue *values = b.find("f32")) {
        for (const JsonValue &v : values->elements())
          buffer.values.push_back(float(v.asDouble()));
        if (int64_t(buffer.values.size()) * 4 != buffer.bytes)
          fail(name, "constant buffer " + std::to_string(buffer.index) +
                         " holds a different number of values than bytes / 4");
      } else {
        buffer.offset = integer(b, "offset", name);
        if (buffer.offset < 0 || buffer.offset + buffer.bytes > out.arenaBytes)
          fail(name, "scratch buffer " + std::to_string(buffer.index) +
                         " lies outside the arena (arena_bytes " +
                         std::to_string(out.arenaBytes) + ")");
      }
      bufferBytes.push_back(buffer.bytes);
      out.buffers.push_back(std::move(buffer));
    }
    // A view must lie inside its buffer.
    auto checkView = [&](const CudaOperand &operand, const std::string &where) {
      if (operand.buffer < 0 || operand.buffer >= int64_t(bufferBytes.size()))
        fail(where, "operand buffer " + std::to_string(operand.buffer) +
                        " does not exist");
      int64_t last = operand.offset;
      for (size_t d = 0; d < operand.sizes.size(); ++d)
        last += (operand.sizes[d] - 1) * operand.strides[d];
      int64_t elements =
          bufferBytes[operand.buffer] / cudaTypeBytes(operand.type);
      if (operand.offset < 0 || last >= elements)
        fail(where, "an operand view reaches outside buffer " +
                        std::to_string(operand.buffer));
    };
    for (const JsonValue &l : list(f, "launches", name)) {
      CudaLaunch launch;
      if (const JsonValue *g = l.find("gemm")) {
        std::string where = name + ": a gemm";
        CudaGemm gemm{view(*g, "a", where), view(*g, "b", where),
                      view(*g, "c", where)};
        if (const JsonValue *accumulate = g->find("accumulate")) {
          if (!accumulate->isBool())
            fail(where, "\"accumulate\" must be true or false");
          gemm.accumulate = accumulate->asBool();
        }
        for (const CudaOperand *v : {&gemm.a, &gemm.b, &gemm.c})
          checkView(*v, where);
        const auto &a = gemm.a.sizes, &b = gemm.b.sizes, &c = gemm.c.sizes;
        if (a[0] != c[0] || b[0] != c[0] || a[1] != c[1] || b[2] != c[2] ||
            a[2] != b[1])
          fail(where, "a, b and c must be [batch, M, K], [batch, K, N] and "
                      "[batch, M, N]");
        if (!columnMajor(gemm))
          fail(where, "a matrix has neither contiguous rows nor contiguous "
                      "columns, which cuBLASLt needs");
        launch.gemm = std::move(gemm);
        out.launches.push_back(std::move(launch));
        continue;
      }
      launch.kernel = string(l, "kernel", name);
      std::string where = name + ": launch of " + launch.kernel;
      for (auto [key, dims] : {std::pair{"grid", &launch.grid},
                               std::pair{"block", &launch.block}}) {
        std::vector<int64_t> v = integers(l, key, where);
        if (v.size() != 3 || v[0] < 1 || v[1] < 1 || v[2] < 1 ||
            v[0] > UINT32_MAX || v[1] > 65535 || v[2] > 65535)
          fail(where, std::string(key) + " must be three sizes within the "
                                         "GPU's limits");
        for (int i = 0; i < 3; ++i)
          (*dims)[i] = uint32_t(v[i]);
      }
      for (const JsonValue &o : list(l, "operands", where)) {
        CudaOperand operand = this->operand(o, where);
        if (operand.isView)
          checkView(operand, where);
        launch.operands.push_back(std::move(operand));
      }
      out.launches.push_back(std::move(launch));
    }
    return out;
  }

private:
  std::string file;
};

} // namespace

int64_t cudaTypeBytes(CudaType type) {
  switch (type) {
  case CudaType::I8:
    return 1;
  case CudaType::F32:
  case CudaType::I32:
    return 4;
  case CudaType::I64:
  case CudaType::F64:
    return 8;
  }
  return 8;
}

CudaManifest parseCudaManifest(const std::string &text,
                               const std::filesystem::path &directory) {
  std::string file = (directory / "manifest.json").string();
  Reader read(file);
  JsonValue root = parseJson(text, file);
  if (!root.isObject() ||
      read.string(root, "format", "top level") != "drc-cuda-1")
    read.fail("top level", "not a drc-cuda-1 manifest");
  if (read.string(root, "memref_abi", "top level") != "descriptor")
    read.fail("top level", "unknown memref_abi");
  CudaManifest m;
  m.chip = read.string(root, "chip", "top level");
  m.spec = read.string(root, "spec", "top level");
  m.ptx = std::filesystem::absolute(directory /
                                    read.string(root, "ptx", "top level"));
  const JsonValue &functions = read.member(root, "functions", "top level");
  if (!functions.isObject())
    read.fail("top level", "\"functions\" must be an object");
  for (const auto &[name, f] : functions.members())
    m.functions.emplace(name, read.function(f, name));
  // The parameter table in its own text form (ParameterTable::toText).
  m.parameters = ParameterTable::parse(
      read.string(root, "parameters", "top level"), file + ": parameters");
  return m;
}

CudaManifest loadCudaManifest(const std::filesystem::path &directory) {
  return parseCudaManifest(
      readInputFile((directory / "manifest.json").string(), "CUDA manifest"),
      directory);
}

KernelArguments::KernelArguments(const CudaLaunch &launch,
                                 const std::vector<uint64_t> &bufferAddresses) {
  auto push = [&](uint64_t bits) { values_.push_back(bits); };
  for (const CudaOperand &o : launch.operands) {
    if (o.isView) {
      uint64_t base = bufferAddresses.at(o.buffer);
      push(base); // allocated
      push(base); // aligned
      push(uint64_t(o.offset));
      for (int64_t s : o.sizes)
        push(uint64_t(s));
      for (int64_t s : o.strides)
        push(uint64_t(s));
      continue;
    }
    uint64_t bits = 0;
    switch (o.type) {
    case CudaType::I64:
      bits = uint64_t(o.integer);
      break;
    case CudaType::I32: {
      int32_t v = int32_t(o.integer);
      std::memcpy(&bits, &v, 4);
      break;
    }
    case CudaType::F32: {
      float v = float(o.real);
      std::memcpy(&bits, &v, 4);
      break;
    }
    case CudaType::F64:
      std::memcpy(&bits, &o.real, 8);
      break;
    case CudaType::I8: {
      int8_t v = int8_t(o.integer);
      std::memcpy(&bits, &v, 1);
      break;
    }
    }
    push(bits);
  }
  // Pointers only once values_ no longer grows.
  for (uint64_t &v : values_)
    pointers_.push_back(&v);
}

} // namespace drc
