//===- TextDomain.cpp - Build a corpus domain from text files -------------===//
#include "runtime/TextDomain.h"

#include "runtime/Error.h"

#include <cmath>
#include <fstream>
#include <iterator>

namespace fs = std::filesystem;

namespace drc {
namespace {

std::string quoted(const fs::path &path) { return "'" + path.string() + "'"; }

std::string readText(const fs::path &file) {
  std::ifstream in(file, std::ios::binary);
  if (!in)
    throw InputError("cannot open input file " + quoted(file));
  std::string text((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  if (in.bad())
    throw InputError("cannot read input file " + quoted(file));
  return text;
}

} // namespace

DomainSizes buildTextDomain(std::span<const fs::path> files,
                            const fs::path &directory,
                            const TextDomainOptions &options) {
  if (files.empty())
    throw InputError("no input file for the domain in " + quoted(directory));
  size_t totalBytes = 0;
  for (const fs::path &file : files) {
    std::error_code error;
    if (!fs::is_regular_file(file, error))
      throw InputError("input file " + quoted(file) +
                       " does not exist or is not a regular file");
    totalBytes += fs::file_size(file, error);
    if (error)
      throw InputError("cannot read the size of input file " + quoted(file) +
                       ": " + error.message());
  }

  double fraction = options.valFraction;
  if (options.valBytes) {
    if (*options.valBytes == 0 || *options.valBytes >= totalBytes)
      throw InputError("val bytes " + std::to_string(*options.valBytes) +
                       " must be between 1 and the " +
                       std::to_string(totalBytes) + " input bytes minus one");
    fraction = static_cast<double>(*options.valBytes) /
               static_cast<double>(totalBytes);
  } else if (!(fraction > 0 && fraction < 1)) {
    throw InputError("val fraction " + std::to_string(fraction) +
                     " must be strictly between 0 and 1");
  }

  DomainWriter writer(directory, options.shardTokens);
  if (files.size() == 1) {
    std::string text = readText(files[0]);
    size_t cut = text.size() - static_cast<size_t>(fraction * text.size());
    // Start val at a line so that neither split begins mid-line.
    size_t newline = text.find('\n', cut == 0 ? 0 : cut - 1);
    cut = newline == std::string::npos ? text.size() : newline + 1;
    std::string_view all(text);
    if (cut > 0)
      writer.addTrain(all.substr(0, cut), quoted(files[0]));
    if (cut < text.size())
      writer.addVal(all.substr(cut), quoted(files[0]));
    return writer.finish();
  }

  for (size_t i = 0; i < files.size(); ++i) {
    std::string text = readText(files[i]);
    // Val takes the documents at positions (k + 1/2) / fraction, k = 0, 1,
    // ...: one in every 1/fraction, regardless of size, centred.
    double before = std::ceil(static_cast<double>(i) * fraction - 0.5);
    double after = std::ceil(static_cast<double>(i + 1) * fraction - 0.5);
    if (after > before)
      writer.addVal(text, quoted(files[i]));
    else
      writer.addTrain(text, quoted(files[i]));
  }
  return writer.finish();
}

} // namespace drc
