//===- drc-bench.cpp - A width-depth sweep over residual designs ---------===//
#include "runtime/AtomicFile.h"
#include "runtime/CommandLine.h"
#include "runtime/Corpus.h"
#include "runtime/ProbeReport.h"
#include "runtime/Probes.h"
#include "runtime/Safetensors.h"
#include "runtime/SweepReport.h"
#include "runtime/SweepResults.h"
#include "runtime/TomlFields.h"
#include "runtime/Trainer.h"
#include "tools/common/HostCompiler.h"

#include <chrono>
#include <cstdio>
#include <optional>
#include <set>

namespace {

const char *const kHelp =
    R"(usage: drc-bench GRID --data DIR --out DIR [--plan | --report]

Runs the width-depth sweep that the grid GRID (docs/bench.md) describes:
every (scheme, n_layer, learning rate, seed) cell, each at the d_model that
puts the Pre-LN model within 3% of the grid's parameter budget, trained on
the corpus DIR (docs/data.md) with the grid's shared recipe. Cells run one
after another; one progress line shows the cells done, the sweep's time
left (a rough estimate from the cells so far), and the current cell's step,
loss, tokens/s and ETA; a line per finished cell gives its loss.
Each cell writes DIR/cells/CELL/ (its model spec, metrics and
checkpoint, as drc-train would), and its final validation losses go to
DIR/results.jsonl, one JSON record per cell. Then the layer probes run on
its checkpoint (drc-probe; [sweep] probe_batches validation batches, 0 for
none) and write DIR/cells/CELL/probes.json. After each cell, DIR/report.md
(tables: loss by design and depth at each design's best learning rate, per
domain, parameters and speed, late-layer pairs, pruning, logit lens and
stream maps), DIR/loss-vs-depth.svg (validation loss against d/L) and
DIR/probes-DESIGN-LN.svg (heatmaps of each design's probes) are written
again from the records.

Everything that can be checked without training is checked first: the
grid, every cell's spec, the data, and every scheme instantiated at every
depth. A sweep that is stopped (or killed) and started again with the same
command skips the cells in results.jsonl (probing any that lack their
probes) and resumes the interrupted cell from its last checkpoint; its
results equal an uninterrupted sweep's. Ctrl-C (SIGINT) or SIGTERM during
a cell's training stops it after the current step with a checkpoint of
that step, so the next start loses nothing; a second one ends it at once.
A cell also checkpoints after every 10 minutes of training without one.

options:
  --data DIR   corpus directory with one subdirectory per domain
  --out DIR    sweep directory (created if missing)
  --plan       print the cells (shapes, parameters, steps) and stop (no
               --data needed); with --out, also where each cell stands
               there (done with its loss and training time, at step S of
               an interrupted run, or to do) and how long the cells left
               train at the done ones' mean time
  --report     write report.md and the plots from DIR/results.jsonl and
               the cells' probes.json, and stop (no --data needed)
  --help       this text

exit status: 0 success, 1 failure while training (e.g. divergence),
             2 bad usage or bad input (grid and its schemes, data, out
               directory), 130 stopped by SIGINT or SIGTERM.
)";

/// `seconds` to the precision a progress line needs: "40 s", "12 min".
std::string roughDuration(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, seconds < 90 ? "%.0f s" : "%.0f min",
                seconds < 90 ? seconds : seconds / 60);
  return text;
}

/// The training step of the checkpoint in `cell`'s run directory under the
/// sweep directory `out` (where the next start resumes it), or none when it
/// has no checkpoint.
std::optional<std::string> checkpointStep(const drc::SweepCell &cell,
                                          const std::filesystem::path &out) {
  std::filesystem::path checkpoint =
      drc::checkpointPath(out / "cells" / cell.id);
  if (!std::filesystem::exists(checkpoint))
    return std::nullopt;
  drc::SafetensorsFile file(checkpoint.string());
  auto step = file.metadata().find("step");
  if (step == file.metadata().end())
    throw drc::InputError(checkpoint.string() +
                          " has no training step in its metadata: not a "
                          "drc-train checkpoint");
  return step->second;
}

/// The cells, and with `out` (a sweep directory, which may not exist yet)
/// where each stands and how long the rest may take.
void printPlan(const drc::SweepSpec &sweep,
               const std::vector<drc::SweepCell> &cells,
               const std::optional<std::filesystem::path> &out) {
  std::printf("%zu cells: %zu schemes x %zu depths (budget %lld parameters, "
              "%s), learning rates and seeds as listed\n",
              cells.size(), sweep.schemes.size(), sweep.nLayers.size(),
              static_cast<long long>(sweep.budget),
              sweep.budgetMode == drc::Budget::Total ? "all parameters"
                                                     : "backbone only");
  std::optional<drc::SweepResults> results;
  if (out)
    results.emplace(*out / "results.jsonl");
  std::printf("%-28s %8s %8s %8s %12s %8s %10s %10s %6s%s\n", "cell", "n_layer",
              "d_model", "d/L", "budget N", "dev", "steps", "lr", "seed",
              out ? "  status" : "");
  size_t done = 0, started = 0;
  double trained = 0;
  for (const drc::SweepCell &c : cells) {
    // Where the cell stands: done (its results.jsonl record), started (a
    // checkpoint) or to do.
    std::string status;
    const drc::JsonValue *record = out ? results->find(c) : nullptr;
    std::optional<std::string> step =
        out && !record ? checkpointStep(c, *out) : std::nullopt;
    if (record) {
      double seconds = record->find("wall_s")->asDouble();
      char text[96];
      std::snprintf(text, sizeof text, "  done: val_loss %.4f, %s",
                    record->find("val_loss")->asDouble(),
                    roughDuration(seconds).c_str());
      status = text;
      ++done;
      trained += seconds;
    } else if (step) {
      status = "  at step " + *step;
      ++started;
    } else if (out) {
      status = "  to do";
    }
    std::printf("%-28s %8lld %8lld %8.1f %12lld %+7.2f%% %10lld %10g %6llu%s\n",
                c.id.c_str(), static_cast<long long>(c.nLayer),
                static_cast<long long>(c.shape.dModel),
                double(c.shape.dModel) / double(c.nLayer),
                static_cast<long long>(c.shape.params),
                100.0 * c.shape.deviation, static_cast<long long>(c.steps),
                c.lr, static_cast<unsigned long long>(c.seed), status.c_str());
  }
  if (!out)
    return;
  std::printf("%s: %zu of %zu cells done", out->string().c_str(), done,
              cells.size());
  if (done)
    std::printf(" (%s of training)", roughDuration(trained).c_str());
  if (started)
    std::printf(", %zu started", started);
  if (done && done < cells.size())
    // Training alone, at the done cells' mean: compiles and probes add to
    // it, and deeper or multi-stream cells take longer than shallow ones.
    std::printf(
        "; the %zu left train for about %s at the done cells' "
        "mean",
        cells.size() - done,
        roughDuration(trained / double(done) * double(cells.size() - done))
            .c_str());
  std::printf("\n");
}

std::filesystem::path probesPath(const std::filesystem::path &out,
                                 const std::string &cell) {
  return out / "cells" / cell / "probes.json";
}

/// report.md, its plot and the probe heatmaps from the records of the grid's
/// cells so far and their probes.
void writeReport(const drc::SweepSpec &sweep,
                 const std::vector<drc::SweepCell> &cells,
                 const drc::SweepResults &results,
                 const std::filesystem::path &out) {
  size_t done = 0;
  for (const drc::SweepCell &cell : cells)
    done += results.find(cell) != nullptr;
  std::vector<drc::SweepPoint> points = drc::bestPoints(sweep, results.list());
  std::map<std::string, drc::JsonValue> probes;
  for (const drc::SweepPoint &p : points) {
    std::filesystem::path file = probesPath(out, p.cell);
    if (!std::filesystem::exists(file))
      continue;
    drc::JsonValue json = drc::parseJson(
        drc::readInputFile(file.string(), "probes"), file.string());
    drc::writeFileAtomically(
        (out / drc::probeFigureFile(p)).string(),
        drc::probeHeatmapsSvg(p.scheme + ", L" + std::to_string(p.nLayer) +
                                  " (d_model " + std::to_string(p.dModel) + ")",
                              json));
    probes.emplace(p.cell, std::move(json));
  }
  // Loss curves for the token efficiency of entries with a baseline.
  drc::SweepCurves curves;
  for (const drc::SweepScheme &scheme : sweep.schemes)
    for (const drc::SweepPoint &p : points)
      if (p.scheme == scheme.label || p.scheme == scheme.baseline)
        if (!scheme.baseline.empty() && !curves.count(p.cell)) {
          std::filesystem::path metrics =
              out / "cells" / p.cell / "metrics.jsonl";
          if (std::filesystem::exists(metrics))
            for (const char *key : {"val_loss", "val_loss_next2"})
              curves[p.cell][key] = drc::readLossCurve(metrics, key);
        }
  drc::writeFileAtomically((out / "loss-vs-depth.svg").string(),
                           drc::lossPlotSvg(points));
  drc::writeFileAtomically((out / "report.md").string(),
                           drc::sweepReport(sweep, points, done, cells.size(),
                                            "loss-vs-depth.svg", probes,
                                            curves));
}

/// The layer probes of a finished cell, to cells/CELL/probes.json; the
/// progress line starts with `label`.
void probeCell(drc::HostCompiler &compiler, const drc::SweepSpec &sweep,
               const drc::SweepCell &cell, const drc::Corpus &corpus,
               const std::filesystem::path &out, const std::string &label) {
  std::filesystem::path dir = out / "cells" / cell.id;
  auto program = compiler.compileProbes(cell.spec);
  drc::ProbeResult result = drc::probeCheckpoint(
      *program, cell.spec, drc::checkpointPath(dir).string(), corpus,
      sweep.probeBatches, label);
  drc::writeFileAtomically(probesPath(out, cell.id).string(),
                           drc::toJson(result.toJson()) + "\n");
}

int benchMain(int argc, char **argv) {
  drc::CommandLine cl(argc, argv, {"data", "out"}, {"plan", "report", "help"});
  if (cl.printedHelp(kHelp))
    return 0;
  drc::SweepSpec sweep = drc::loadSweepSpec(cl.onlyPositional("GRID"));
  std::vector<drc::SweepCell> cells = drc::planSweep(sweep);
  if (cl.flag("plan")) {
    std::optional<std::string> out = cl.value("out");
    printPlan(sweep, cells,
              out ? std::optional<std::filesystem::path>(*out) : std::nullopt);
    return 0;
  }
  std::filesystem::path out = cl.required("out");
  if (cl.flag("report")) {
    if (!std::filesystem::exists(out / "results.jsonl"))
      throw drc::InputError((out / "results.jsonl").string() +
                            " does not exist: no cell of this sweep has "
                            "finished");
    drc::SweepResults results(out / "results.jsonl");
    writeReport(sweep, cells, results, out);
    std::printf("report in %s\n", (out / "report.md").string().c_str());
    return 0;
  }
  drc::Corpus corpus =
      drc::loadCorpus(cl.required("data"), static_cast<uint32_t>(sweep.vocab));
  drc::HostCompiler compiler;
  // A scheme's options and its fit to each depth are checked by
  // instantiating it, which takes milliseconds; compiling waits for its cell.
  std::set<std::pair<std::string, int64_t>> instantiated;
  for (const drc::SweepCell &cell : cells) {
    if (!instantiated.insert({cell.scheme, cell.nLayer}).second)
      continue;
    compiler.lower(cell.spec, mlir::drc::CompileStage::Drc);
  }
  // Every cell validates on the grid's batch, seq_len and eval_tokens.
  const drc::ModelSpec &first = cells.front().spec;
  drc::BatchSampler(corpus, first.train.batch, first.model.seqLen,
                    first.train.evalTokens)
      .requireValidationBatch();
  if (sweep.probeBatches) {
    drc::checkProbeBatches(cells.front().spec, corpus, sweep.probeBatches);
    drc::taskDomains(corpus); // an unknown TASK is refused before training
  }
  std::error_code ec;
  std::filesystem::create_directories(out / "cells", ec);
  if (ec)
    throw drc::InputError("cannot create the sweep directory " + out.string() +
                          ": " + ec.message());
  drc::SweepResults results(out / "results.jsonl");

  auto began = std::chrono::steady_clock::now();
  size_t done = 0, ranHere = 0;
  std::string sweepLeft; // this run's estimate, once a cell has finished
  // Every progress line starts with the sweep's: "[3/18 cells, sweep about
  // 14 min left] hc-L4-lr0.002-s1 step 120/434 | loss ... | ETA ...".
  auto label = [&](const drc::SweepCell &cell, const char *what) {
    return "[" + std::to_string(done) + "/" + std::to_string(cells.size()) +
           " cells" +
           (sweepLeft.empty() ? "" : ", sweep about " + sweepLeft + " left") +
           "] " + cell.id + " " + what;
  };
  for (size_t i = 0; i < cells.size(); ++i) {
    const drc::SweepCell &cell = cells[i];
    if (results.find(cell)) {
      // Killed between its training and its probes: probe it now.
      if (sweep.probeBatches &&
          !std::filesystem::exists(probesPath(out, cell.id))) {
        std::fprintf(stderr, "drc-bench: cell %zu/%zu %s: layer probes\n",
                     i + 1, cells.size(), cell.id.c_str());
        probeCell(compiler, sweep, cell, corpus, out, label(cell, "probe"));
        writeReport(sweep, cells, results, out);
      }
      ++done;
      continue;
    }
    std::filesystem::path dir = out / "cells" / cell.id;
    std::fprintf(stderr,
                 "drc-bench: cell %zu/%zu %s: n_layer %lld, d_model %lld, "
                 "lr %g, seed %llu, %lld steps\n",
                 i + 1, cells.size(), cell.id.c_str(),
                 static_cast<long long>(cell.nLayer),
                 static_cast<long long>(cell.shape.dModel), cell.lr,
                 static_cast<unsigned long long>(cell.seed),
                 static_cast<long long>(cell.steps));
    auto model = compiler.compile(cell.spec);
    drc::TrainOptions options;
    options.runDir = dir;
    options.steps = cell.steps;
    options.seed = cell.seed;
    options.resume = std::filesystem::exists(drc::checkpointPath(dir));
    options.specText = cell.specToml;
    options.progressLabel = label(cell, "step");
    drc::TrainSummary summary;
    try {
      summary = drc::train(*model, cell.spec, corpus, options);
    } catch (const drc::Interrupted &e) {
      throw drc::Interrupted("cell " + cell.id + " " + e.what() +
                             "; run the same command again to resume the "
                             "sweep there");
    }
    results.add(cell, model->parameters().numParameters(), summary.final,
                summary.wallSeconds, summary.tokensPerSecond);
    model.reset();
    if (sweep.probeBatches) {
      std::fprintf(stderr, "drc-bench: cell %zu/%zu %s: layer probes\n", i + 1,
                   cells.size(), cell.id.c_str());
      probeCell(compiler, sweep, cell, corpus, out, label(cell, "probe"));
    }
    writeReport(sweep, cells, results, out);
    ++done;
    ++ranHere;
    double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began)
            .count();
    // The cells left at this run's mean time per cell (compiles included):
    // a rough guide, since deeper and multi-stream cells take longer.
    double left = elapsed / ranHere * double(cells.size() - done);
    sweepLeft = roughDuration(left);
    std::fprintf(stderr,
                 "drc-bench: cell %zu/%zu %s: val_loss %.4f (%zu of %zu "
                 "cells done, %.0f s in this run, about %s left)\n",
                 i + 1, cells.size(), cell.id.c_str(), summary.final.loss, done,
                 cells.size(), elapsed, sweepLeft.c_str());
  }
  std::printf("%zu cells done; results in %s\n", cells.size(),
              results.file().string().c_str());
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  return drc::runTool("drc-bench", benchMain, argc, argv);
}
