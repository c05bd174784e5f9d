//===- DepthTask.h - Accuracy by k on a synthetic depth task ----*- C++ -*-===//
//
// A task domain (a corpus domain with a TASK file, e.g. drc-data perm) has
// lines whose answer needs k serial steps (runtime/PermutationDomain.h). The
// depth task probe runs a model's probe program over that domain's
// validation text and counts, for each k and each depth state z_b, how often
// the argmax of z_b's logit lens is the answer: at b = L that is the model's
// accuracy, and the depth where accuracy appears shows which blocks compute
// the answer.
//
// Windows start at a line break and are laid so that every problem whose
// line lies wholly inside a window is scored exactly once.
//
//===----------------------------------------------------------------------===//
#ifndef DRC_RUNTIME_DEPTHTASK_H
#define DRC_RUNTIME_DEPTHTASK_H

#include "runtime/Corpus.h"
#include "runtime/Json.h"
#include "runtime/ProbeProgram.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace drc {

struct DepthTaskResult {
  std::string domain, task;
  int64_t windows = 0;
  /// Problems scored with k = i + 1 steps (the last entry has answers).
  std::vector<int64_t> answers;
  /// accuracy[b][i]: the fraction of problems with k = i + 1 whose answer is
  /// the argmax of the logit lens of z_b, b = 0..L (L: the model's output).
  std::vector<std::vector<double>> accuracy;
  JsonValue toJson() const;
};

/// One scored position of a window.
struct TaskAnswer {
  int64_t position; ///< t: inputs[t] ends the problem, targets[t] answers it
  int hops;         ///< k
};

/// The indices of the task domains of `corpus`. Throws InputError for a
/// TASK file that names a task drc does not know.
std::vector<size_t> taskDomains(const Corpus &corpus);

/// Start offsets in `domain.val` of at most `maxWindows` windows of seqLen
/// inputs (and seqLen targets one later), each starting at a line break.
std::vector<size_t> taskWindows(const CorpusDomain &domain, int64_t seqLen,
                                size_t maxWindows);

/// The problems of `task` whose lines lie wholly in one window. Throws
/// Error when a whole line is not a problem of the task or its target is
/// not the answer (the domain is not what its TASK file says).
std::vector<TaskAnswer> taskAnswers(const std::string &task,
                                    const int32_t *inputs,
                                    const int32_t *targets, int64_t seqLen);

/// Scores the task domain's windows starting at `starts` (taskWindows) with
/// `program` (batch x seqLen tokens per call); `progress(done, total)`
/// after each call. Throws InputError when there is no window.
DepthTaskResult
runDepthTask(ProbeProgram &program, const float *params,
             const CorpusDomain &domain, const std::vector<size_t> &starts,
             int64_t seqLen,
             const std::function<void(int64_t, int64_t)> &progress = {});

} // namespace drc

#endif // DRC_RUNTIME_DEPTHTASK_H
