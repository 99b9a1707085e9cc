#include "src/train/adapt/layout_decider.hpp"

#include <algorithm>
#include <cstdio>

#include "src/core/error.hpp"
#include "src/train/adapt/adapt_noise.hpp"

namespace gt {

namespace {

bool same(const LayoutChoice& a, const LayoutChoice& b) { return same_layout(a, b); }

double median_of(const std::vector<LayoutSample>& w, double LayoutSample::*field) {
  std::vector<double> v;
  for (const LayoutSample& s : w) v.push_back(s.*field);
  std::sort(v.begin(), v.end());
  return adapt_noise::quantile(v, 0.5);
}

}  // namespace

const char* layout_action_name(LayoutAction a) {
  return a == LayoutAction::Switch ? "switch" : a == LayoutAction::SwitchBack ? "switch_back" : "keep";
}

std::string layout_text(const GridShape& g) {
  return "tp " + std::to_string(g.tp) + " x pp " + std::to_string(g.pp) + " x dp " + std::to_string(g.dp);
}

std::string layout_text(const LayoutChoice& c) {
  return layout_text(c.grid) + ", zero " + std::to_string(c.zero) + ", micro-batch " + std::to_string(c.micro_batch);
}

bool same_grid(const GridShape& a, const GridShape& b) { return a.tp == b.tp && a.pp == b.pp && a.dp == b.dp; }

bool same_layout(const LayoutChoice& a, const LayoutChoice& b) {
  return same_grid(a.grid, b.grid) && a.zero == b.zero && a.micro_batch == b.micro_batch;
}

LayoutDecider::LayoutDecider(LayoutSettings s, LayoutChoice now, LayoutMemory memory)
    : set_(s), now_(now), mem_(std::move(memory)) {
  if (set_.window < 1 || set_.interval < 1) throw Error("adapt: the layout decider needs window and interval >= 1");
}

bool LayoutDecider::observe(int step, const LayoutSample& sample) {
  if (!warm_) {  // the first step after the start or a switch: not counted
    warm_ = true;
    return false;
  }
  window_.push_back(sample);
  if (int(window_.size()) > set_.window) window_.erase(window_.begin());
  return int(window_.size()) == set_.window && step - mem_.last_eval >= set_.interval;
}

LayoutSample LayoutDecider::window_median() const {
  LayoutSample m;
  if (window_.empty()) return m;
  m.step_ms = median_of(window_, &LayoutSample::step_ms);
  m.compute_ms = median_of(window_, &LayoutSample::compute_ms);
  m.optimizer_ms = median_of(window_, &LayoutSample::optimizer_ms);
  m.tp_ms = median_of(window_, &LayoutSample::tp_ms);
  m.dp_ms = median_of(window_, &LayoutSample::dp_ms);
  return m;
}

// The first evaluation after a switch: did it deliver? Short (below 1 + t/2, or below its prediction by more than
// 1 + t): back to the layout it left, and never to this one again. Returns true when it switched back.
bool LayoutDecider::judge(LayoutDecision* d, double t) {
  if (!mem_.pending) return false;
  mem_.pending = false;
  d->judged_step = mem_.switch_step;
  d->measured_gain = d->measured_ms > 0 ? mem_.before_ms / d->measured_ms : 0;
  d->promised_gain = mem_.promised;
  if (d->measured_gain >= 1.0 + t / 2 && d->measured_gain * (1.0 + t) >= mem_.promised) return false;
  mem_.failed.push_back(now_);
  if (!same_grid(now_.grid, mem_.left.grid)) mem_.failed_grids.push_back(now_.grid);
  const LayoutChoice back = mem_.left;
  mem_.has_left = false;  // going back is not a switch to judge: the old layout was measured already
  take(d, LayoutAction::SwitchBack, back);
  return true;
}

void LayoutDecider::take(LayoutDecision* d, LayoutAction a, const LayoutChoice& to) {
  d->action = a;
  d->to = to;
  if (a == LayoutAction::Switch) {
    mem_.has_left = true;
    mem_.left = now_;
    mem_.pending = true;
    mem_.switch_step = d->step;
    mem_.before_ms = d->measured_ms;
    mem_.promised = d->gain;
  }
  now_ = to;
  window_.clear();
  warm_ = false;
}

LayoutDecision LayoutDecider::decide(int step, const std::vector<LayoutPrediction>& predicted,
                                     const std::string& hold) {
  LayoutDecision d;
  d.evaluated = true;
  d.step = step;
  d.current = d.best = d.to = now_;
  d.candidates = int(predicted.size());
  mem_.last_eval = step;
  std::vector<double> steps;
  for (const LayoutSample& s : window_) steps.push_back(s.step_ms);
  d.measured_ms = window_median().step_ms;
  d.noise = adapt_noise::relative_spread(steps);
  const double t = std::max(set_.threshold, set_.noise_factor * d.noise);
  d.needed = 1.0 + t;
  const auto here = std::find_if(predicted.begin(), predicted.end(), [&](auto& p) { return same(p.shape, now_); });
  if (here == predicted.end()) throw Error("adapt: the current layout " + layout_text(now_) + " was not predicted");
  d.predicted_now_ms = here->predicted_ms;
  const LayoutPrediction* best = nullptr;
  for (const LayoutPrediction& p : predicted) {  // the first of equal predictions: every rank chooses the same
    const bool tried = std::any_of(mem_.failed.begin(), mem_.failed.end(), [&](auto& f) { return same(f, p.shape); }) ||
                       std::any_of(mem_.failed_grids.begin(), mem_.failed_grids.end(),
                                   [&](auto& g) { return same_grid(g, p.shape.grid); });
    if (!same(p.shape, now_) && !tried && p.predicted_ms > 0 && (!best || p.predicted_ms < best->predicted_ms)) best = &p;
  }
  if (best) {  // what the model proposes (also logged when the judgement below switches back instead)
    d.best = best->shape;
    d.predicted_best_ms = best->predicted_ms;
    d.gain = d.predicted_now_ms / best->predicted_ms;
  }
  if (judge(&d, t)) return d;  // measured against measured: judged whatever the guard says
  if (!hold.empty()) {  // what the model proposes is logged, not taken
    d.reason = hold;
    return d;
  }
  if (!best) {
    d.note = predicted.size() > 1 ? "every other layout was tried and measured short" : "no other layout fits";
    return d;
  }
  if (mem_.has_left && same(best->shape, mem_.left)) d.needed = 1.0 + 2.0 * t;
  if (d.gain < d.needed) return d;
  if (set_.total_steps > 0) {  // it must pay for itself (see the header)
    d.cost_ms = mem_.switch_cost_ms >= 0 ? mem_.switch_cost_ms : set_.cost_in_steps * d.measured_ms;
    d.saved_ms = (d.measured_ms - d.measured_ms / d.gain) * double(std::max(0, set_.total_steps - step));
    if (d.saved_ms <= 2.0 * d.cost_ms) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "saves %.0f ms over the steps left, a switch costs %.0f ms (it must save twice that)",
                    d.saved_ms, d.cost_ms);
      d.note = buf;
      return d;
    }
  }
  take(&d, LayoutAction::Switch, best->shape);
  return d;
}

}  // namespace gt
