#include "src/train/adapt/dp_share_adapter.hpp"

#include <algorithm>
#include <functional>
#include <cstdio>

#include "src/core/error.hpp"
#include "src/train/adapt/adapt_agree.hpp"
#include "src/core/json.hpp"

namespace gt {

namespace {

std::string list_text(const std::vector<double>& v) { return number_list(v, 3); }

std::string shares_text(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out;
}

// The checkpoint's root attribute holding the shares in force when it was written ("3,1").
const char* const kSharesKey = "adapt.dp_shares";

// "3,1" -> {3, 1}; an entry that is not a whole number >= 1 gives {} (the checkpoint's value is then ignored).
std::vector<int> parse_shares(const std::string& text) {
  std::vector<int> out;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string part = text.substr(at, comma - at);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 6) return {};
    out.push_back(std::stoi(part));
    if (out.back() < 1) return {};
    at = comma + 1;
  }
  return out;
}

std::vector<int> starting_shares(const Config& cfg, int dp) {
  std::vector<int> s = cfg.parallel.dp_share_counts();
  return s.empty() ? std::vector<int>(size_t(dp), cfg.train.micro_batches) : s;
}

std::vector<int> replica_of_every_rank(Grid& grid) {
  const int mine = grid.dp_rank();
  std::vector<int> all(size_t(grid.world_size()));
  grid.world().allgather(&mine, all.data(), 1, DType::I32);
  return all;
}

dp::DpShareSettings settings(const Config& cfg) {
  dp::DpShareSettings s;
  s.interval = cfg.parallel.adapt_interval;
  s.threshold = cfg.parallel.rebalance_gain;
  return s;
}

std::string decision_json(const dp::DpShareDecision& d) {
  JsonObject j;
  j.integer("step", d.step).str("action", d.move ? "move" : "keep").str("from_shares", shares_text(d.current))
      .str("to_shares", shares_text(d.proposed)).raw("per_micro_batch_ms", list_text(d.per_micro_ms))
      .num("step_compute_ms", d.now_ms).num("predicted_ms", d.predicted_ms).num("predicted_gain", d.gain)
      .num("needed_gain", d.needed).num("noise_spread", d.noise).num("bar_raised", d.raised);
  if (d.measured_gain > 0)
    j.num("measured_gain_of_last_move", d.measured_gain).num("predicted_gain_of_last_move", d.promised_gain)
        .integer("last_move_step", d.measured_move_step);
  if (d.reverted) j.raw("reverted", "true");
  return j.dump();
}

}  // namespace

void check_adapt_dp_shares(const Config& cfg, const GridShape& g) {
  const ConfigChoices c = cfg.choices();
  std::string why;
  if (g.dp < 2) why = "with parallel.pp = 1 it balances data-parallel shares and parallel.dp = " + std::to_string(g.dp);
  else if (cfg.parallel.zero >= 2) why = "uneven data-parallel shares need parallel.zero <= 1 (staged gradients assume equal counts)";
  else if (c.compress == CompressMethod::TopK) why = "uneven data-parallel shares do not run with compress.method = \"topk\" yet";
  else if (c.schedule == PipelineSchedule::GPipe) why = "parallel.schedule = \"gpipe\" sizes its activation slots for the starting share";
  if (!why.empty()) throw Error("config: parallel.adapt = \"rebalance\" cannot run here: " + why);
}

DpShareAdapter::DpShareAdapter(const Config& cfg, Grid& grid)
    : grid_(grid),
      settings_(settings(cfg)),
      replica_of_rank_(replica_of_every_rank(grid)),
      decider_(settings_, replica_of_rank_, starting_shares(cfg, grid.shape().dp)),
      shares_(starting_shares(cfg, grid.shape().dp)) {}

void DpShareAdapter::save_meta(CheckpointMeta& meta) const { meta.strings[kSharesKey] = shares_text(shares_); }

// Before the read (every rank alike, the same meta): the checkpoint's shares are adopted when they fit this run
// (one per replica, the same global batch); any other case keeps the configured shares and says why.
bool DpShareAdapter::restores_from(ExtensionIo&, const CheckpointMeta& meta) {
  resumed_.clear();
  resume_note_.clear();
  const auto it = meta.strings.find(kSharesKey);
  if (it == meta.strings.end()) return true;  // written without adaptive shares: the configured ones
  const std::vector<int> saved = parse_shares(it->second);
  int sum = 0, saved_sum = 0;
  for (int x : shares_) sum += x;
  for (int x : saved) saved_sum += x;
  if (saved.empty())
    resume_note_ = "the checkpoint's " + std::string(kSharesKey) + " = \"" + it->second + "\" is not a list of shares";
  else if (saved.size() != shares_.size())
    resume_note_ = "the checkpoint's adapted data-parallel shares " + it->second + " are for dp = " +
                   std::to_string(saved.size()) + ", this run has dp = " + std::to_string(shares_.size());
  else if (saved_sum != sum)
    resume_note_ = "the checkpoint's adapted data-parallel shares " + it->second + " sum to " +
                   std::to_string(saved_sum) + " micro-batches, this run's global batch has " + std::to_string(sum);
  else if (saved != shares_)
    resumed_ = saved;
  return true;
}

bool DpShareAdapter::take_resumed() {
  const bool adopt = !resumed_.empty();
  if (grid_.world_rank() == 0 && adopt)
    std::printf("gridtrain: adapt: resuming on data-parallel shares %s, adapted before the checkpoint "
                "(parallel.dp_shares gives %s)\n", shares_text(resumed_).c_str(), shares_text(shares_).c_str());
  if (grid_.world_rank() == 0 && !resume_note_.empty())
    std::printf("gridtrain: note: %s: starting from parallel.dp_shares (%s)\n", resume_note_.c_str(),
                shares_text(shares_).c_str());
  std::fflush(stdout);
  if (adopt) {
    shares_ = resumed_;
    decider_ = dp::DpShareDecider(settings_, replica_of_rank_, shares_);
  }
  resumed_.clear();
  resume_note_.clear();
  return adopt;
}

bool DpShareAdapter::after_step(int step, const std::vector<double>& compute_ms, StepStats* s) {
  const dp::DpShareDecision d = decider_.observe(step, compute_ms);
  if (!d.evaluated) return false;
  dp::DpShareDecision mine = d;  // the agreement: world rank 0's decision is every rank's
  mine.move = agree_with_rank0(grid_.world(), d.move, &mine.proposed);
  s->adapt_json = decision_json(mine);
  decisions_.push_back(s->adapt_json);
  if (grid_.world_rank() == 0) {
    std::printf("gridtrain: step %d: adapt: data-parallel compute per micro-batch %s ms on shares %s (step %.2f ms); "
                "balanced for the measured speeds: shares %s (step %.2f ms); gain %.2f, threshold %.2f (noise spread "
                "%.2f, bar raised x%g)", step, list_text(mine.per_micro_ms).c_str(), shares_text(mine.current).c_str(),
                mine.now_ms, shares_text(mine.proposed).c_str(), mine.predicted_ms, mine.gain, mine.needed,
                mine.noise, mine.raised);
    if (mine.measured_gain > 0)
      std::printf("; the move at step %d measured gain %.2f (predicted %.2f)", mine.measured_move_step,
                  mine.measured_gain, mine.promised_gain);
    std::printf(": %s\n", mine.reverted ? "going back to the shares before it" :
                          mine.move ? "changing the shares" : "keeping the shares");
    std::fflush(stdout);
  }
  if (mine.move) shares_ = mine.proposed;
  return mine.move;
}

std::string DpShareAdapter::uneven_reason() const {
  if (std::adjacent_find(shares_.begin(), shares_.end(), std::not_equal_to<int>()) == shares_.end()) return "";
  return "uneven data-parallel shares " + shares_text(shares_) + ": the replicas' ranks are not equally fast";
}

std::string DpShareAdapter::decisions_json() const {
  return json_list(decisions_);
}

}  // namespace gt
