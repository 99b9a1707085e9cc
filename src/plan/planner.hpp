#pragma once
// Every layout of a model on N devices of a cluster: which fit in memory (and why the others do not), ranked
// by predicted tokens/s. Used by `gridtrain plan` and by the trainer's parallel.layout = auto.
#include <string>
#include <vector>

#include "src/plan/cluster.hpp"
#include "src/plan/memory.hpp"
#include "src/plan/step_time.hpp"

namespace gt::plan {

struct PlanOptions {
  int devices = 1;
  long global_batch = 0;       // sequences per step; 0 with fixed_micro_batches: b x m x dp follows dp
  Framework framework = Framework::Gridtrain;
  std::vector<Precision> precisions{Precision::FP32, Precision::BF16, Precision::FP16};
  std::vector<int> zero_stages;        // empty: every stage the framework has (framework.hpp)
  std::vector<Recompute> recomputes{Recompute::None, Recompute::Selective, Recompute::Full};
  std::vector<int> micro_batch_sizes;  // empty: every divisor of the per-rank batch up to max_micro_batch
  int max_micro_batch = 16;
  int fixed_micro_batches = 0;         // > 0: m is fixed (then global_batch = b m dp for each dp)
  int tp = 0, pp = 0;                  // > 0: only this degree
  int cp = 1;                          // context-parallel degree (fixed; 1: none)
  std::vector<int> virtual_stages;     // interleaving; empty: 1, and with a framework that interleaves every v
                                       // that divides the layers per stage
  int tp_overlap = -1;                 // TP communication overlapped with the GEMMs: -1 the framework's default
  // Sequence parallelism under tp > 1: -1 the framework's default (traits; gridtrain: off, the trainer's default
  // parallel.sequence_parallel), 0 off, 1 on (gridtrain: a tp that does not divide the sequence is then refused,
  // as the trainer refuses it)
  int sequence_parallel = -1;
  bool tp_across_nodes = false;        // TP groups larger than a node are rejected unless allowed
  bool gpipe = false;
};

struct Candidate {
  Layout layout;
  MemoryBreakdown memory;   // of the most-loaded stage
  TimeBreakdown time;
  bool fits = false;
  std::string reason;       // why rejected (empty when it fits)
};

struct Plan {
  std::vector<Candidate> fits;      // best first (tokens/s, then less memory)
  std::vector<Candidate> rejected;  // with reasons
};

// Throws gt::Error on bad options (no devices, no batch) but not when nothing fits: the caller decides.
Plan make_plan(const ModelShape& m, const Cluster& c, const PlanOptions& o);

// Structural reason a layout cannot run (heads or vocabulary not divisible by tp, fewer blocks than stages,
// TP across nodes); empty when it can.
std::string structural_problem(const ModelShape& m, const Cluster& c, const Layout& l, const PlanOptions& o);

// Why nothing fits, on one line: the rejected layout closest to fitting (least memory) and its reason, then the
// other distinct reasons (at most `reasons` in all) and how many layouts were rejected.
std::string rejection_summary(const Plan& p, int reasons = 3);

}  // namespace gt::plan

namespace gt::plan {

// parallel.layout = auto: the best (tp, pp, dp) for `world` devices with what gridtrain trains today (fp32,
// no ZeRO, no recompute, the deck's micro-batch size and count), and the runner-up (null if none). tp, pp > 0
// fix that degree; sequence_parallel: the deck's parallel.sequence_parallel (planned wherever tp > 1). Throws
// gt::Error with rejection_summary when nothing fits.
struct AutoChoice {
  Candidate best;
  bool has_runner_up = false;
  Candidate runner_up;
};
AutoChoice choose_layout(const ModelShape& m, const Cluster& c, int world, int micro_batch, int micro_batches,
                         int tp = 0, int pp = 0, bool sequence_parallel = false);

}  // namespace gt::plan
