//===- ObjectCache.cpp - compiled objects on disk, by program ------------===//
#include "codegen/ObjectCache.h"

#include "llvm/Bitcode/BitcodeWriter.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Object/ObjectFile.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <cstdlib>

using namespace mlir::drc;

/// Changes whenever CpuJit compiles the same IR differently.
static constexpr const char *kRecipe = "O3 Aggressive v1";

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
                         const llvm::TargetMachine &machine) {
  std::string dir = cacheDirectory();
  if (dir.empty())
    return;
  std::string key;
  llvm::raw_string_ostream os(key);
  llvm::WriteBitcodeToFile(module, os);
  os << '\0' << machine.getTargetTriple().str() << '\0'
     << machine.getTargetCPU() << '\0' << machine.getTargetFeatureString()
     << '\0' << LLVM_VERSION_STRING << '\0' << kRecipe;
  llvm::XXH128_hash_t hash = llvm::xxh3_128bits(llvm::ArrayRef<uint8_t>(
      reinterpret_cast<const uint8_t *>(key.data()), key.size()));
  llvm::SmallString<256> file(dir);
  llvm::sys::path::append(
      file, llvm::formatv("{0:x-16}{1:x-16}.o", hash.high64, hash.low64).str());
  path = std::string(file);
}

std::unique_ptr<llvm::MemoryBuffer> ObjectCache::load() const {
  if (path.empty())
    return nullptr;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return nullptr;
  auto object = llvm::object::ObjectFile::createObjectFile(**buffer);
  if (!object) {
    llvm::consumeError(object.takeError());
    return nullptr;
  }
  return std::move(*buffer);
}

void ObjectCache::store(llvm::ArrayRef<char> object) const {
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
    out.write(object.data(), object.size());
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
