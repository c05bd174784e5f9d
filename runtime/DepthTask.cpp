//===- DepthTask.cpp - Accuracy by k on a synthetic depth task -----------===//
#include "runtime/DepthTask.h"

#include "runtime/DomainWriter.h"
#include "runtime/Error.h"
#include "runtime/PermutationDomain.h"

#include <algorithm>
#include <limits>

namespace drc {
namespace {

bool isLineBreak(int64_t token) {
  return token == '\n' || token == kDocumentSeparator;
}

/// Where the line after the break at `at` ends within [at, end): the position
/// of its '=' (the problem's last input), or of the next line break, or
/// `end` when the window cuts the line.
template <typename Token>
size_t lineEnd(const Token *tokens, size_t at, size_t end) {
  for (size_t i = at + 1; i < end; ++i)
    if (tokens[i] == '=' || isLineBreak(tokens[i]))
      return i;
  return end;
}

} // namespace

JsonValue DepthTaskResult::toJson() const {
  JsonValue out = JsonValue::object();
  out.set("domain", domain);
  out.set("task", task);
  out.set("windows", windows);
  JsonValue counts = JsonValue::array();
  for (int64_t n : answers)
    counts.push(n);
  out.set("answers_by_k", std::move(counts));
  JsonValue rows = JsonValue::array();
  for (const std::vector<double> &depth : accuracy) {
    JsonValue row = JsonValue::array();
    for (size_t i = 0; i < depth.size(); ++i)
      row.push(answers[i] ? JsonValue(depth[i]) : JsonValue());
    rows.push(std::move(row));
  }
  out.set("accuracy_by_depth_and_k", std::move(rows));
  return out;
}

std::vector<size_t> taskDomains(const Corpus &corpus) {
  std::vector<size_t> out;
  for (size_t d = 0; d < corpus.domains.size(); ++d) {
    const CorpusDomain &domain = corpus.domains[d];
    if (domain.task.empty())
      continue;
    if (domain.task != kPermutationTask)
      throw InputError((domain.directory / "TASK").string() + " names task '" +
                       domain.task +
                       "', which drc does not know; the known "
                       "task is '" +
                       std::string(kPermutationTask) +
                       "' (drc-data perm), or delete the file");
    out.push_back(d);
  }
  return out;
}

std::vector<size_t> taskWindows(const CorpusDomain &domain, int64_t seqLen,
                                size_t maxWindows) {
  const std::vector<uint16_t> &val = domain.val;
  const size_t T = size_t(seqLen);
  std::vector<size_t> starts;
  size_t p = std::find_if(val.begin(), val.end(), isLineBreak) - val.begin();
  while (starts.size() < maxWindows && p + T + 1 <= val.size()) {
    starts.push_back(p);
    // The next window starts at the first line this one cuts short.
    size_t next = p + T;
    for (size_t q = p + 1; q < p + T; ++q)
      if (isLineBreak(val[q]) && lineEnd(val.data(), q, p + T) == p + T) {
        next = q;
        break;
      }
    while (next < val.size() && !isLineBreak(val[next]))
      ++next;
    p = next;
  }
  return starts;
}

std::vector<TaskAnswer> taskAnswers(const std::string &task,
                                    const int32_t *inputs,
                                    const int32_t *targets, int64_t seqLen) {
  if (task != kPermutationTask)
    throw Error("no scorer for task '" + task + "'");
  std::vector<TaskAnswer> out;
  for (int64_t q = 0; q < seqLen; ++q) {
    if (!isLineBreak(inputs[q]))
      continue;
    size_t end = lineEnd(inputs, size_t(q), size_t(seqLen));
    if (end == size_t(seqLen) || end == size_t(q) + 1)
      continue; // cut by the window, or an empty line
    std::string line;
    for (size_t i = q + 1; i <= end; ++i)
      line += char(inputs[i]);
    std::optional<PermutationProblem> problem = parsePermutationProblem(line);
    if (!problem || targets[end] != problem->answer)
      throw Error("a line of the '" + task +
                  "' task domain is not a problem "
                  "with its answer: '" +
                  line + char(targets[end]) +
                  "'; rebuild the domain with drc-data perm");
    out.push_back({int64_t(end), problem->hops});
  }
  return out;
}

DepthTaskResult
runDepthTask(ProbeProgram &program, const float *params,
             const CorpusDomain &domain, const std::vector<size_t> &starts,
             int64_t seqLen,
             const std::function<void(int64_t, int64_t)> &progress) {
  const ProbeShape &shape = program.shape();
  const int64_t N = shape.tokens, B = N / seqLen, depths = shape.blocks + 1,
                V = shape.vocab, n = shape.streams, L = shape.blocks;
  if (starts.empty())
    throw InputError("task domain '" + domain.name +
                     "' has no validation "
                     "window of " +
                     std::to_string(seqLen + 1) +
                     " tokens that starts at a line break");
  std::vector<int32_t> inputs(N), targets(N);
  std::vector<float> states(N * depths * shape.width), lens(N * depths * V),
      maps(n ? N * 2 * L * n * n : 0);
  std::vector<std::vector<int64_t>> correct(depths);
  DepthTaskResult r;
  r.domain = domain.name;
  r.task = domain.task;
  r.windows = int64_t(starts.size());
  const int64_t calls = (r.windows + B - 1) / B;
  for (int64_t call = 0; call < calls; ++call) {
    // A partial last batch repeats the first window in its spare rows.
    for (int64_t row = 0; row < B; ++row) {
      int64_t w = call * B + row;
      size_t start = starts[w < r.windows ? w : 0];
      for (int64_t t = 0; t < seqLen; ++t) {
        inputs[row * seqLen + t] = domain.val[start + t];
        targets[row * seqLen + t] = domain.val[start + t + 1];
      }
    }
    program.probe(params, inputs.data(), targets.data(), states.data(),
                  lens.data(), maps.data());
    for (int64_t row = 0; row < B && call * B + row < r.windows; ++row)
      for (const TaskAnswer &a :
           taskAnswers(r.task, inputs.data() + row * seqLen,
                       targets.data() + row * seqLen, seqLen)) {
        size_t k = size_t(a.hops);
        if (r.answers.size() < k) {
          r.answers.resize(k, 0);
          for (std::vector<int64_t> &c : correct)
            c.resize(k, 0);
        }
        ++r.answers[k - 1];
        int64_t t = row * seqLen + a.position;
        for (int64_t b = 0; b < depths; ++b) {
          const float *logits = lens.data() + (t * depths + b) * V;
          int64_t top = std::max_element(logits, logits + V) - logits;
          correct[b][k - 1] += top == targets[t];
        }
      }
    if (progress)
      progress(call + 1, calls);
  }
  for (const std::vector<int64_t> &c : correct) {
    std::vector<double> row(c.size());
    for (size_t i = 0; i < c.size(); ++i)
      row[i] = r.answers[i] ? double(c[i]) / double(r.answers[i])
                            : std::numeric_limits<double>::quiet_NaN();
    r.accuracy.push_back(std::move(row));
  }
  return r;
}

} // namespace drc
