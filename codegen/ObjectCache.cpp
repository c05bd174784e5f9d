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
#include <optional>

using namespace mlir::drc;

/// Changes whenever CpuJit compiles the same IR differently.
static constexpr const char *kRecipe =
    "O3 per part, float sums without reassoc for codegen, no post-RA scheduler "
    "v5";

/// A module entry: the magic, the number of objects, then each object's
/// size (8 bytes, little-endian) and bytes.
static constexpr llvm::StringLiteral kMagic = "drc-objects\n";
/// A program entry: the magic, then the file name of a module entry in the
/// same directory.
static constexpr llvm::StringLiteral kLinkMagic = "drc-link\n";

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

/// The entry file for `key` (plus the target and recipe), named by their
/// hash with `extension`; empty when the cache is off.
static std::string entryPath(std::string key,
                             const llvm::TargetMachine &machine, unsigned parts,
                             llvm::StringRef extension) {
  std::string dir = cacheDirectory();
  if (dir.empty())
    return "";
  llvm::raw_string_ostream os(key);
  os << '\0' << machine.getTargetTriple().str() << '\0'
     << machine.getTargetCPU() << '\0' << machine.getTargetFeatureString()
     << '\0' << LLVM_VERSION_STRING << '\0' << kRecipe << '\0' << parts;
  llvm::XXH128_hash_t hash =
      llvm::xxh3_128bits(llvm::arrayRefFromStringRef(key));
  llvm::SmallString<256> file(dir);
  llvm::sys::path::append(
      file,
      llvm::formatv("{0:x-16}{1:x-16}.{2}", hash.high64, hash.low64, extension)
          .str());
  return std::string(file);
}

/// The bytes of the running executable, hashed once; none if unreadable.
static std::optional<std::string> executableFingerprint() {
  static std::optional<std::string> fingerprint =
      []() -> std::optional<std::string> {
    static int anchor;
    std::string exe = llvm::sys::fs::getMainExecutable(nullptr, &anchor);
    auto bytes = llvm::MemoryBuffer::getFile(exe, /*IsText=*/false,
                                             /*RequiresNullTerminator=*/false);
    if (exe.empty() || !bytes)
      return std::nullopt;
    llvm::XXH128_hash_t hash =
        llvm::xxh3_128bits(llvm::arrayRefFromStringRef((*bytes)->getBuffer()));
    return llvm::formatv("{0:x-16}{1:x-16}", hash.high64, hash.low64).str();
  }();
  return fingerprint;
}

ObjectCache ObjectCache::forModule(const llvm::Module &module,
                                   const llvm::TargetMachine &machine,
                                   unsigned parts) {
  std::string key;
  llvm::raw_string_ostream os(key);
  llvm::WriteBitcodeToFile(module, os);
  return ObjectCache(entryPath(std::move(key), machine, parts, "objects"));
}

ObjectCache ObjectCache::forProgram(llvm::StringRef program,
                                    const llvm::TargetMachine &machine,
                                    unsigned parts) {
  std::optional<std::string> executable = executableFingerprint();
  if (program.empty() || !executable)
    return ObjectCache("");
  std::string key = program.str();
  key += '\0';
  key += *executable;
  return ObjectCache(entryPath(std::move(key), machine, parts, "program"));
}

/// Writes `path` atomically (a temporary file renamed over it); on any
/// failure leaves it as it was.
static void
writeAtomically(llvm::StringRef path,
                llvm::function_ref<void(llvm::raw_ostream &)> write) {
  if (llvm::sys::fs::create_directories(llvm::sys::path::parent_path(path)))
    return;
  int fd;
  llvm::SmallString<256> temporary;
  if (llvm::sys::fs::createUniqueFile(path + ".%%%%%%.tmp", fd, temporary))
    return;
  {
    llvm::raw_fd_ostream out(fd, /*shouldClose=*/true);
    write(out);
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

/// The objects of the entry at `path`, or none; a program entry's link is
/// followed once.
static std::vector<std::unique_ptr<llvm::MemoryBuffer>>
loadEntry(const std::string &path, bool followLink) {
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> objects;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return objects;
  llvm::StringRef rest = (*buffer)->getBuffer();
  if (rest.consume_front(kLinkMagic)) {
    if (!followLink || rest.empty() || rest.contains('/'))
      return objects;
    llvm::SmallString<256> target(llvm::sys::path::parent_path(path));
    llvm::sys::path::append(target, rest);
    return loadEntry(std::string(target), /*followLink=*/false);
  }
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

std::vector<std::unique_ptr<llvm::MemoryBuffer>> ObjectCache::load() const {
  if (path.empty())
    return {};
  return loadEntry(path, /*followLink=*/true);
}

void ObjectCache::store(
    llvm::ArrayRef<llvm::SmallVector<char, 0>> objects) const {
  if (path.empty())
    return;
  writeAtomically(path, [&](llvm::raw_ostream &out) {
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
  });
}

void ObjectCache::linkTo(const ObjectCache &module) const {
  if (path.empty() || module.path.empty())
    return;
  writeAtomically(path, [&](llvm::raw_ostream &out) {
    out << kLinkMagic << llvm::sys::path::filename(module.path);
  });
}
