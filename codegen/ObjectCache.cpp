//===- ObjectCache.cpp - compiled objects on disk, by program ------------===//
#include "codegen/ObjectCache.h"

#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cstdlib>

using namespace mlir::drc;

/// Changes whenever CpuJit compiles the same IR differently.
static constexpr const char *kRecipe = "O3 Aggressive v3";

/// An entry: the magic, the number of objects, then each object's size
/// (8 bytes, little-endian) and bytes.
static constexpr llvm::StringLiteral kMagic = "drc-objects\n";

static std::string cacheDirectory() {
  if (const char *dir = std::getenv("DRC_CACHE_DIR"))
    return llvm::StringRef(dir) == "off" ? "" : dir;
  llvm::SmallString<256> dir;
  if (const char *xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg)
    dir = xdg;
  else if (const char *home = std::getenv("HOME"); home && *home)
    llvm::sys::path::append(dir, home, ".cache");
  else
    return "";
  llvm::sys::path::append(dir, "drc");
  return std::string(dir);
}

ObjectCache::ObjectCache(const llvm::Module &module,
                         const llvm::TargetMachine &machine, unsigned parts) {
  std::string dir = cacheDirectory();
  if (dir.empty())
    return;
  std::string key;
  llvm::raw_string_ostream os(key);
  llvm::WriteBitcodeToFile(module, os);
  os << '\0' << machine.getTargetTriple().str() << '\0'
     << machine.getTargetCPU() << '\0' << machine.getTargetFeatureString()
     << '\0' << LLVM_VERSION_STRING << '\0' << kRecipe << '\0' << parts;
  llvm::XXH128_hash_t hash = llvm::xxh3_128bits(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(key.data()), key.size()));
  llvm::SmallString<256> file(dir);
  llvm::sys::path::append(
      file,
      llvm::formatv("{0:x-16}{1:x-16}.objects", hash.high64, hash.low64).str());
  path = std::string(file);
}

std::vector<std::unique_ptr<llvm::MemoryBuffer>> ObjectCache::load() const {
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects;
  if (path.empty())
    return objects;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return objects;
  llvm::StringRef rest = (*buffer)->getBuffer();
  if (!rest.consume_front(kMagic) || rest.size() < 8)
    return objects;
  auto take64 = [&rest](uint64_t &value) {
    if (rest.size() < 8)
      return false;
    value = llvm::support::endian::read64le(rest.data());
    rest = rest.drop_front(8);
    return true;
  };
  uint64_t count = 0;
  take64(count);
  for (uint64_t i = 0; i < count; ++i) {
    uint64_t size = 0;
    if (!take64(size) || size > rest.size())
      return {};
    auto object = llvm::MemoryBuffer::getMemBufferCopy(
        rest.take_front(size), path + "." + std::to_string(i));
    rest = rest.drop_front(size);
    auto parsed = llvm::object::ObjectFile::createObjectFile(*object);
    if (!parsed) {
      llvm::consumeError(parsed.takeError());
      return {};
    }
    objects.push_back(std::move(object));
  }
  if (!rest.empty())
    return {};
  return objects;
}

void ObjectCache::store(
    llvm::ArrayRef<llvm::SmallVector<char, 0>> objects) const {
  if (path.empty())
    return;
  llvm::StringRef dir = llvm::sys::path::parent_path(path);
  if (llvm::sys::fs::create_directories(dir))
    return;
  int fd;
  llvm::SmallString<256> temporary;
  if (llvm::sys::fs::createUniqueFile(path + ".%%%%%%.tmp", fd, temporary))
    return;
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    auto write64 = [&out](uint64_t value) {
      char bytes[8];
      llvm::support::endian::write64le(bytes, value);
      out.write(bytes, 8);
    };
    out << kMagic;
    write64(objects.size());
    for (const llvm::SmallVector<char, 0> &object : objects) {
      write64(object.size());
      out.write(object.data(), object.size());
    }
    out.close();
    if (out.has_error()) {
      out.clear_error();
      llvm::sys::fs::remove(temporary);
      return;
    }
  }
  if (llvm::sys::fs::rename(temporary, path))
    llvm::sys::fs::remove(temporary);
}
