#pragma once
// Straggler detector (issue 25, monitoring only): fed one array of per-rank compute seconds per step (already
// gathered, as step_stats gathers them), it names the ranks that are consistently slower than their peers.
// Pure: no MPI, no clock; every rank may run it on the same gathered array and gets the same answer.
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace gt {

struct StragglerConfig {
  // 1.25x: step-to-step compute jitter of a healthy rank on shared cores stays well under 25%; a throttled or
  // co-scheduled rank (the case the issue names: 2x) is far above it.
  double enter_ratio = 1.25;
  // 1.10x: a lower exit threshold (hysteresis) so a rank hovering near 1.25x does not flap in and out each step.
  double exit_ratio = 1.10;
  // k of the last w steps above enter_ratio: one slow step (a checkpoint write, a page fault burst, the first
  // step's allocations) is not a straggler; 4 of 5 tolerates one fast outlier step in a slow streak.
  int k = 4;
  int window = 5;
};

// The detector for parallel.straggler_ratio: that enter ratio, the exit ratio as far below it as the default's
// (1.10 for 1.25: 40% of the margin), k and the window as above.
inline StragglerConfig straggler_config(double enter_ratio) {
  StragglerConfig c;
  c.exit_ratio = 1.0 + (c.exit_ratio - 1.0) / (c.enter_ratio - 1.0) * (enter_ratio - 1.0);
  c.enter_ratio = enter_ratio;
  return c;
}

struct StragglerStep {
  std::vector<int> stragglers;  // ranks flagged after this step, ascending
  std::vector<int> became;      // ranks that became stragglers at this step
  std::vector<int> stopped;     // ranks that stopped being stragglers at this step
  int slowest_rank = -1;        // rank with the largest ratio to its peers' median (-1 with no ranks)
  double slowest_ratio = 1.0;   // that ratio (1 when no rank has peers)
};

class StragglerDetector {
 public:
  // stage_of_rank[r]: the pipeline stage of rank r; ranks are compared only with ranks of the same stage
  // (stages hold different blocks, so their compute differs by design). All zeros when pp = 1.
  StragglerDetector(StragglerConfig cfg, std::vector<int> stage_of_rank);

  // One step: compute_s[r] is rank r's compute seconds. Throws std::invalid_argument on a size mismatch.
  StragglerStep observe(const std::vector<double>& compute_s);

  // Steps each rank was flagged (for summary.json).
  const std::vector<std::int64_t>& flagged_steps() const { return flagged_steps_; }

  // Ratio of rank r's time to the median of the other ranks of its stage; 1 without peers or with a zero median.
  double ratio_to_peers(const std::vector<double>& compute_s, int r) const;

  // The verdict after the last observed step in words, for the watchdog's report when it fires (a straggler is
  // often the rank that then stops): "stragglers: rank 1 at 2.95x its peers' median compute (flagged for the
  // last 7 steps)", or "no straggler (slowest: rank 0 at 1.04x ...)"; "" before the first step.
  std::string describe() const;

 private:
  StragglerConfig cfg_;
  std::vector<int> stage_of_rank_;
  std::vector<std::deque<bool>> above_;  // per rank: the last `window` steps, true when above enter_ratio
  std::vector<int> below_run_;           // per rank: consecutive steps below exit_ratio
  std::vector<bool> flagged_;
  std::vector<int> flagged_run_;         // per rank: consecutive steps flagged, up to the last one
  std::vector<double> last_ratio_;       // per rank: its ratio at the last step
  StragglerStep last_;
  bool observed_ = false;
  std::vector<std::int64_t> flagged_steps_;
};

}  // namespace gt
