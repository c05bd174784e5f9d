//===- drc-data.cpp - Build and inspect token shards ----------------------===//
//
// The command-line face of runtime/TextDomain, runtime/MathDomain,
// runtime/PermutationDomain and runtime/TokenShard; docs/data.md is the user
// guide.
//
//===----------------------------------------------------------------------===//
#include "runtime/Corpus.h"
#include "runtime/Error.h"
#include "runtime/MathDomain.h"
#include "runtime/PermutationDomain.h"
#include "runtime/TextDomain.h"
#include "runtime/TokenShard.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

const char *const kHelp = R"(usage: drc-data <command> [options]

Builds corpus domains of llm.c-compatible uint16 token shards with the
byte-level tokenizer (token = byte, vocabulary 256; every document starts
with a NUL byte), and inspects shards. See docs/data.md.

commands:
  text --out DIR [--val-fraction F | --val-bytes N] [--shard-tokens N] FILE...
      Writes FILE... (in the order given, one document each) to the domain
      DIR as DIR/train_NNNNNN.bin and DIR/val_NNNNNN.bin, replacing shards
      of an earlier build. One file in every 1/F, evenly spaced, goes to
      val, where F is --val-fraction (default 0.05) or --val-bytes N over
      the total input bytes; so about F of the bytes are val. A single FILE
      is split instead: its last F of bytes, from a line start, is val.
  math --out DIR --seed S --bytes N [--val-bytes N] [--shard-tokens N]
      Writes generated arithmetic worksheets (sums, products, quotients,
      stepwise expressions, linear equations) to the domain DIR: at least
      --bytes N of train text and --val-bytes N of val text (default 5% of
      --bytes), both a pure function of the seed S.
  perm --out DIR --seed S --bytes N [--val-bytes N] [--max-hops K]
       [--shard-tokens N]
      Writes the synthetic depth task (docs/data.md): lines
      "c:bdace,eacbd=e" that apply k permutations of a-e (k uniform in
      1..K, --max-hops default 8, at most 32) to a start symbol, sized as
      for math, and a file DIR/TASK so drc-probe and drc-bench score the
      answers by k.
  info FILE...
      Prints each shard's header, token count, token range and unigram
      entropy.

options:
  --shard-tokens N   tokens per shard (default 100000000, as llm.c)
  --help             this text

exit status: 0 success, 1 failure while working, 2 bad usage or bad input.
)";

/// Wrong command-line usage; reported with a pointer to --help.
struct UsageError {
  std::string message;
};

template <typename Number>
Number parseNumber(const std::string &flag, const std::string &text) {
  Number value{};
  auto [end, error] =
      std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size())
    throw UsageError{flag + " expects a number, got '" + text + "'"};
  return value;
}

/// Flags with one value each, then positional arguments.
struct Arguments {
  std::vector<std::pair<std::string, std::string>> flags;
  std::vector<std::string> positional;

  std::optional<std::string> take(const std::string &flag) {
    auto it = std::find_if(flags.begin(), flags.end(),
                           [&](const auto &f) { return f.first == flag; });
    if (it == flags.end())
      return std::nullopt;
    std::string value = it->second;
    flags.erase(it);
    return value;
  }

  std::string require(const std::string &flag) {
    std::optional<std::string> value = take(flag);
    if (!value)
      throw UsageError{"missing " + flag};
    return *value;
  }

  /// Every flag must have been taken by the command.
  void finish() const {
    if (!flags.empty())
      throw UsageError{"unknown option " + flags.front().first};
  }
};

Arguments parseArguments(int argc, char **argv, int first) {
  Arguments arguments;
  std::set<std::string> seen;
  for (int i = first; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      arguments.positional.insert(arguments.positional.end(), argv + i + 1,
                                  argv + argc);
      break;
    }
    if (!arg.starts_with("--")) {
      arguments.positional.push_back(arg);
      continue;
    }
    if (i + 1 == argc)
      throw UsageError{arg + " expects a value"};
    if (!seen.insert(arg).second)
      throw UsageError{arg + " given twice"};
    arguments.flags.emplace_back(arg, argv[++i]);
  }
  return arguments;
}

size_t shardTokens(Arguments &arguments) {
  std::optional<std::string> value = arguments.take("--shard-tokens");
  return value ? parseNumber<size_t>("--shard-tokens", *value)
               : drc::kDefaultShardTokens;
}

void printSizes(const fs::path &directory, const drc::DomainSizes &sizes) {
  for (auto [name, split] :
       {std::pair{"train", sizes.train}, std::pair{"val", sizes.val}})
    std::printf("drc-data: %s/%s: %zu tokens in %zu shard%s, %zu documents\n",
                directory.c_str(), name, split.tokens, split.shards,
                split.shards == 1 ? "" : "s", split.documents);
}

int runText(Arguments arguments) {
  fs::path out = arguments.require("--out");
  drc::TextDomainOptions options;
  std::optional<std::string> fraction = arguments.take("--val-fraction");
  std::optional<std::string> valBytes = arguments.take("--val-bytes");
  if (fraction && valBytes)
    throw UsageError{"give --val-fraction or --val-bytes, not both"};
  if (fraction)
    options.valFraction = parseNumber<double>("--val-fraction", *fraction);
  if (valBytes)
    options.valBytes = parseNumber<size_t>("--val-bytes", *valBytes);
  options.shardTokens = shardTokens(arguments);
  arguments.finish();
  if (arguments.positional.empty())
    throw UsageError{"text needs at least one input FILE"};
  std::vector<fs::path> files(arguments.positional.begin(),
                              arguments.positional.end());
  printSizes(out, drc::buildTextDomain(files, out, options));
  return drc::kExitOk;
}

/// The options math and perm share: --out, --seed, --bytes, --val-bytes.
struct GeneratedDomain {
  fs::path out;
  uint64_t seed;
  size_t bytes, valBytes;
};

GeneratedDomain generatedDomain(Arguments &arguments) {
  GeneratedDomain domain;
  domain.out = arguments.require("--out");
  domain.seed = parseNumber<uint64_t>("--seed", arguments.require("--seed"));
  domain.bytes = parseNumber<size_t>("--bytes", arguments.require("--bytes"));
  std::optional<std::string> valBytes = arguments.take("--val-bytes");
  domain.valBytes = valBytes ? parseNumber<size_t>("--val-bytes", *valBytes)
                             : std::max<size_t>(1, domain.bytes / 20);
  return domain;
}

void noFiles(const Arguments &arguments, const char *command) {
  if (!arguments.positional.empty())
    throw UsageError{std::string(command) + " takes no FILE arguments, got '" +
                     arguments.positional.front() + "'"};
}

int runMath(Arguments arguments) {
  GeneratedDomain domain = generatedDomain(arguments);
  size_t tokens = shardTokens(arguments);
  arguments.finish();
  noFiles(arguments, "math");
  printSizes(domain.out,
             drc::buildMathDomain(domain.out, domain.seed, domain.bytes,
                                  domain.valBytes, tokens));
  return drc::kExitOk;
}

int runPerm(Arguments arguments) {
  GeneratedDomain domain = generatedDomain(arguments);
  std::optional<std::string> hops = arguments.take("--max-hops");
  int maxHops = hops ? parseNumber<int>("--max-hops", *hops) : 8;
  size_t tokens = shardTokens(arguments);
  arguments.finish();
  noFiles(arguments, "perm");
  printSizes(domain.out, drc::buildPermutationDomain(domain.out, domain.seed,
                                                     maxHops, domain.bytes,
                                                     domain.valBytes, tokens));
  return drc::kExitOk;
}

int runInfo(Arguments arguments) {
  arguments.finish();
  if (arguments.positional.empty())
    throw UsageError{"info needs at least one shard FILE"};
  for (const std::string &file : arguments.positional) {
    std::vector<uint16_t> tokens = drc::readTokenShard(file);
    auto [low, high] = std::minmax_element(tokens.begin(), tokens.end());
    double entropy = drc::unigramEntropy(tokens);
    std::printf("%s: magic %d, version %d, %zu tokens", file.c_str(),
                drc::kTokenShardMagic, drc::kTokenShardVersion, tokens.size());
    if (!tokens.empty())
      std::printf(", tokens %u..%u", unsigned(*low), unsigned(*high));
    std::printf(", unigram entropy %.4f nats (%.4f bits) per token\n", entropy,
                entropy / std::log(2.0));
  }
  return drc::kExitOk;
}

int run(int argc, char **argv) {
  if (argc < 2)
    throw UsageError{"missing command"};
  std::string command = argv[1];
  for (int i = 1; i < argc && std::strcmp(argv[i], "--") != 0; ++i)
    if (std::strcmp(argv[i], "--help") == 0 ||
        std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kHelp, stdout);
      return drc::kExitOk;
    }
  int (*commandFunction)(Arguments) = command == "text"   ? runText
                                      : command == "math" ? runMath
                                      : command == "perm" ? runPerm
                                      : command == "info" ? runInfo
                                                          : nullptr;
  if (!commandFunction)
    throw UsageError{"unknown command '" + command + "'"};
  return commandFunction(parseArguments(argc, argv, 2));
}

} // namespace

int main(int argc, char **argv) {
  try {
    return run(argc, argv);
  } catch (const UsageError &error) {
    std::fprintf(stderr, "drc-data: error: %s\nTry 'drc-data --help'.\n",
                 error.message.c_str());
    return drc::kExitBadInput;
  } catch (const drc::Error &error) {
    std::fprintf(stderr, "drc-data: error: %s\n", error.what());
    return error.exitCode();
  } catch (const std::exception &error) {
    std::fprintf(stderr, "drc-data: error: %s\n", error.what());
    return drc::kExitFailure;
  }
}
