#pragma once
// parallel.adapt = rebalance at pp = 1 (issue 25, docs/adaptive.md): data-parallel shares re-derived from the
// measured speed of each replica. Pure (no MPI, no clock): fed every rank's compute milliseconds of each step (the
// straggler monitor's all-gathered array, the same on every rank), it says when to change parallel.dp_shares and
// to what. The arithmetic of what a share means (samples, weights) is dp_shares.hpp's.
#include <vector>

namespace gt::dp {

// The shares that minimise the predicted step compute max_r(shares[r] x per_micro_ms[r]) with the same sum as
// `current` and each at least 1: every replica starts at 1, then each remaining micro-batch goes to the replica
// that would finish it first (ties: the lowest replica, so every rank proposes the same). This greedy is exact for
// this objective (each step adds the smallest possible new maximum), and its result is proportional to speed up
// to whole micro-batches. Equal speeds give the even split back.
struct ShareProposal {
  std::vector<int> shares;
  double now_ms = 0;        // max_r current[r] x per_micro_ms[r]
  double predicted_ms = 0;  // max_r shares[r] x per_micro_ms[r]
  double gain = 1;          // now_ms / predicted_ms
};
ShareProposal propose_dp_shares(const std::vector<int>& current, const std::vector<double>& per_micro_ms);

struct DpShareSettings {
  int interval = 10;          // parallel.adapt_interval: steps between two evaluations at least
  double threshold = 0.1;     // parallel.rebalance_gain: move when the predicted gain >= 1 + this (at least)
  int window = 5;             // counted steps whose per-replica median an evaluation uses
  // The measured noise raises the threshold to noise_factor x spread, the spread being (p75 - p25) / median of
  // the window's bottleneck, each step's slowest replica compute (share x per-micro-batch time). Why 2: for normal noise the
  // interquartile range is 1.35 sigma, so the bar is 2.7 sigma of one replica's step-to-step noise, about 4.8
  // standard errors of its median over 5 steps (1.25 sigma / sqrt(5)): noise alone on the slowest of 4 replicas
  // does not fake that. The noise on a loaded machine is heavy-tailed and drifts over tens of steps (the dp = 4
  // benchmark moved on predicted gains of 1.25 between splits equally good for its one slow rank), which this
  // margin covers, while a real 2x slowdown (a predicted gain of 1.33 or more with 2 micro-batches per replica)
  // still moves under a spread up to ~0.16 (+-15% jitter).
  double noise_factor = 2.0;
};

// One evaluation (evaluated = false: none this step).
struct DpShareDecision {
  bool evaluated = false;
  bool move = false;
  int step = 0;
  std::vector<int> current, proposed;
  std::vector<double> per_micro_ms;  // each replica's median compute per micro-batch over the window
  // now_ms and predicted_ms are both predicted from per_micro_ms (the current shares' and the proposed shares'
  // step), so the gain compares like with like; needed: the gain a move must reach here.
  double now_ms = 0, predicted_ms = 0, gain = 1, needed = 1;
  double noise = 0;  // the window's relative spread (DpShareSettings::noise_factor)
  double raised = 1; // the factor the bar is raised by after moves that fell short of their prediction
  // The previous move's measured gain over this window (its step compute before / now) and the gain it was
  // predicted to have; 0 when no move preceded.
  double measured_gain = 0, promised_gain = 0;
  int measured_move_step = 0;
  // The last change made the step slower beyond the noise (measured gain x (1 + t) < 1): this evaluation goes back
  // to the shares it left (proposed = those), whatever the model now predicts, as a re-layout switches back.
  bool reverted = false;
};

// Hysteresis, so that noise does not flip the shares back and forth:
// - the first step after the start and after a change is not counted (the prefetch queue is refilled, and the
//   slow-rank test hook sleeps on the previous step's compute);
// - an evaluation needs `window` counted steps since the last change and `interval` steps since the last
//   evaluation, and uses each replica's median over the window;
// - a change needs a predicted gain >= 1 + t, with t = max(threshold, noise_factor x the window's spread): a gain
//   within the step-to-step noise of the replicas' own times is not believed;
// - going back to the shares left at the last change needs 1 + 2 t (a move that does not pay in measurement is
//   undone only when the measurement says so clearly);
// - a move whose measured gain (the step before it over the first window after it) fell short of its predicted
//   gain by more than 1 + t doubles t for the moves after it (up to 8x), until a move delivers its prediction:
//   the model misjudged this machine, so its next promises are trusted less.
class DpShareDecider {
 public:
  // replica_of_rank: the DP replica of every world rank (the ranks of a replica run in step: its time is their
  // maximum); shares: the starting shares (one per replica).
  DpShareDecider(DpShareSettings s, std::vector<int> replica_of_rank, std::vector<int> shares);
  // After step `step`, every rank's compute milliseconds. A returned move is taken: the decider's shares are the
  // proposed ones from here on.
  DpShareDecision observe(int step, const std::vector<double>& compute_ms);
  const std::vector<int>& shares() const { return shares_; }

 private:
  DpShareSettings set_;
  std::vector<int> replica_of_rank_;
  std::vector<int> shares_, left_;          // now, and the shares left at the last change
  std::vector<std::vector<double>> window_; // per counted step: each replica's compute per micro-batch
  bool warm_ = false;                       // the next step is counted
  int last_eval_ = -1000000;
  double before_move_ms_ = 0;               // the step compute measured before the last change
  double promised_ = 0;                     // the predicted gain of the last change
  double raised_ = 1;                       // the bar's factor (hysteresis after a move that fell short)
  int move_step_ = 0;
  void judge_last_move(DpShareDecision* d, double t);
};

}  // namespace gt::dp
