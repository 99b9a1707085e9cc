#!/usr/bin/env bash
# parallel.adapt = full (docs/adaptive.md, "Live re-layout"): the decided switch, its judgement, the switch back and
# no retry, end to end on 2 ranks (tiny, dp 2 x 2 micro-batches, 30 steps, an evaluation every 3 steps at most);
# and the guard: no switch while a rank is a straggler, whatever the prediction.
#
# Why a hook fakes the planner here: the calibrated planner models identical devices, so a slow rank slows every
# layout of the same ranks alike (dp 2 waits for it at the all-reduce, pp 2 at its stage, tp 2 at every
# collective); no layout escapes a straggler, and the honest prediction under GRIDTRAIN_TEST_SLOW_RANK alone is
# "keep": the slowed run without the fake below must keep (measured 2026-12-05: every other layout predicted at
# least 1.35x slower, a gain of 0.73 against a bar of 1.1-1.4; the calibration takes the slowest rank's figures,
# so the fast rank's waiting at the all-reduce is not mistaken for a slow link). GRIDTRAIN_TEST_LAYOUT_PREDICT=1,2,1:0.25 makes the model claim pp 2 is 4x
# better than it thinks: a model that misjudges this machine, the case the judgement is for. tp 2's prediction is
# multiplied by 4 so that no real prediction for it can take part (the test is about the mechanism, not about
# what tiny's real figures favour on a loaded machine). The decided run has nothing slow (a slowed rank is what
# the guard, src/train/adapt/layout_guard.hpp, holds every switch for: the model's identical devices are the wrong
# evidence then). Expected:
#   step 7: the first evaluation (warm-up step 1, window 2..6; due at 6, where the data-parallel shares' rebalancer
#           evaluates, so one step later) switches dp 2 -> pp 2 (predicted gain >= 2);
#   step 13: the first evaluation on pp 2 (warm-up 8, window 9..13) measures no such gain: switches back to dp 2;
#   step 19 or 20 and later: keep (pp 2 was tried and is never tried again, tp 2 predicted worse).
# The held run has the same fake and rank 1 slowed 2x: the straggler detector flags rank 1 (from step 5), so every
# evaluation keeps with the guard's reason ("straggler: rank 1"), though the fake prediction clears the bar. With
# the guard disabled it switched at its first evaluation like the decided run (tried once, restored). The held_pp run is the slow
# stage the straggler detector cannot see (pp 2: one rank per stage, no peers): 4 blocks on 2,2, rank 1 (stage 1)
# slowed 4x, dp 2 faked 4x better; every evaluation must keep with the rebalancing decider's imbalance. Slowed 2x,
# the figure was too close to the bar for a noisy machine: stage 1 at 1.4-1.6x the mean stage time, a rebalance to
# 3,1 predicting 1.5-1.9 here (2026-12-06), but 1.25x and 1.10-1.11 on stop 32's CI machine, which then switched.
# At 4x: stage 1 at 1.58-1.65x the mean, the rebalance predicting 1.85 (3 runs 2026-12-06, one beside two busy loops).
# Losses against the undisturbed dp 2 run (parallel.adapt = off, nothing slow): the steps up to the first switch or share move bitwise (the same layout,
# the same sums); the steps after the switch within 1e-6 relative: the same global
# batch and weights on another layout, whose sums run in another order (pp 2 accumulates the 4 micro-batches on
# one replica, dp 2 two per replica and then across; the same tolerance and reason as the data-parallel shares'
# tests, measured 3e-9 there). A handover that lost or misplaced a value misses by orders more (a lost AdamW
# moment: step 7's loss 36.2 instead of 4.36, tests/train/test_relayout.sh).
# The quiet run (adapt = full, nothing slow, no fake) and the slowed run without the fake must not switch (the slowed
# one's honest prediction must be below its bar on its own, besides the guard), and then their losses and the held
# run's equal the undisturbed run's bitwise (evaluating only reads the figures; the hook only sleeps). One rank is
# refused with one line.
# Under full the data-parallel shares' rebalancer runs too (dp 2 here): in the held and slow runs it moves a
# micro-batch off the slowed rank (3,1), the layout decision of that step waits for the next (one decision a step),
# and the guard holds on the uneven shares besides the straggler; the losses after the shares change are within
# the same 1e-6 (the sums regroup, as the shares' own tests state), bitwise before. Layout evaluations are the
# records with "from_layout"; summary.json lists both kinds in step order.
#   test_relayout_decided.sh GRIDTRAIN MPIEXEC
common=(train --config tiny parallel.dp=2 train.micro_batches=2 train.steps=30 output.log_every=1
        output.peak_gflops=1 checkpoint.save_final=false parallel.allreduce=mpi parallel.adapt_interval=3)
TAG=relayoutdecided
source "$(dirname "$0")/../common/train_runs.sh"
run_np 2 even parallel.adapt=off
# The decided run needs no rank flagged a straggler at its first evaluation (the guard would hold the switch, as designed). On 2
# shared, loaded cores the detector flags a descheduled rank now and then at its default 1.25x (measured 2026-12-06
# 01:58 UTC, load 2.6: three runs in a row held at every evaluation, "straggler: rank 1", then "rank 0"; the CI
# machine of stop 32 held 5 of 7 such runs at their first evaluation, so the to_mb run failed after 3 tries).
# Nothing is slowed in these runs, so they raise parallel.straggler_ratio to 4 (a rank at 4x its peer in 4 of 5
# steps, which a ~10 ms step's descheduling does not make): the guard's straggler sign stays on (the held run
# below tests it at the default ratio), only the noise is kept out. A run still held at its first evaluation (by
# uneven data-parallel shares, say) is tried again, 3 times at most; the checks below are those of one run.
# The fake names one layout (tp 1 x pp 2 x dp 1, zero 0, micro-batch 8); every other layout but the current one is
# made 4x worse, so that no real prediction among the 18 candidates (3 grids, ZeRO stages, micro-batch sizes 4, 8,
# 16) takes part: the test is about the mechanism.
others="1,1,2,0,8:1;1,1,2:4;1,2,1:4;2,1,1:4"
fake="1,2,1,0,8:0.25;$others"
decided_run() {  # decided_run NAME FAKE: a run under full with the fake, tried again while held at its first evaluation
  local name=$1 try first
  for try in 1 2 3; do
    GRIDTRAIN_TEST_LAYOUT_PREDICT=$2 run_np 2 "$name" parallel.adapt=full parallel.straggler_ratio=4
    first=$(grep -m1 '"from_layout"' "$work/$name/metrics.jsonl")
    [[ $first == *'"reason"'* ]] || break
    echo "$name run held at its first evaluation by this machine's noise (try $try): $(grep -o '"reason":[^,}]*' <<<"$first")"
    [[ $try == 3 ]] || rm -rf "${work:?}/$name" "$work/$name.log"
  done
}
decided_run decided "$fake"
# The same on one grid: a switch of micro-batch size (8 -> 16: one micro-batch of 16 per replica) and one of ZeRO
# stage with it (a run on ZeRO 1 to ZeRO 0 and micro-batch 4: ZeRO is a candidate only at the lowest stage that
# fits, here 0, and the current grid and micro-batch size keep theirs), each faked alone the same way; the checks below: the first evaluation switches to that layout, and
# every loss is within 1e-6 of the undisturbed run (the global batch kept; the sums regroup).
decided_run to_mb "1,1,2,0,16:0.25;$others"
common+=(parallel.zero=1)  # to_zero starts on ZeRO 1 (bitwise the ZeRO 0 run's losses here: fp32, the same sums)
decided_run to_zero "1,1,2,0,4:0.25;1,1,2,1,8:1;1,1,2:4;1,2,1:4;2,1,1:4"
unset "common[$(( ${#common[@]} - 1 ))]"
GRIDTRAIN_TEST_SLOW_RANK=1:2 GRIDTRAIN_TEST_LAYOUT_PREDICT=$fake run_np 2 held parallel.adapt=full
GRIDTRAIN_TEST_SLOW_RANK=1:4 GRIDTRAIN_TEST_LAYOUT_PREDICT="1,1,2:0.25;2,1,1:4" run_np 2 held_pp parallel.adapt=full \
  parallel.dp=1 parallel.pp=2 train.micro_batches=4 model.n_layer=4
run_np 2 quiet parallel.adapt=full
GRIDTRAIN_TEST_SLOW_RANK=1:2 run_np 2 slow parallel.adapt=full
python3 - "$work" <<'PY' || exit 1
import json, sys
w = sys.argv[1]
runs = ("even", "decided", "held", "held_pp", "quiet", "slow", "to_mb", "to_zero")
lines = {k: [json.loads(l) for l in open(f"{w}/{k}/metrics.jsonl")] for k in runs}
ok = True
def fail(*a):
    global ok
    ok = False
    print("FAIL:", *a)
def evals(k): return [l["adapt"] for l in lines[k] if "adapt" in l and "from_layout" in l["adapt"]]
def share_moves(k): return [l["adapt"]["step"] for l in lines[k] if "adapt" in l and l["adapt"].get("to_shares") and l["adapt"]["action"] == "move"]
d = evals("decided")
acts = [(e["step"], e["action"], e["to_layout"], e.get("reason", e.get("note", ""))) for e in d]
print("decided run:", acts)
sw = [e for e in d if e["action"] != "keep"]
if len(sw) != 2 or sw[0]["action"] != "switch" or sw[1]["action"] != "switch_back":
    fail("expected one switch and one switch back:", acts)
else:
    a, b = sw
    if a["to_layout"] != "tp 1 x pp 2 x dp 1, zero 0, micro-batch 8" or a["predicted_gain"] < a["needed_gain"] or "reason" in a:
        fail("the switch was not to pp 2 on a gain above its bar, unheld:", a)
    if b["to_layout"] != "tp 1 x pp 1 x dp 2, zero 0, micro-batch 8" or b.get("last_switch_step") != a["step"]:
        fail("the switch back did not return to dp 2 judging the switch:", b)
    print(f"ok: switched at step {a['step']} (predicted gain {a['predicted_gain']:.2f}, needed {a['needed_gain']:.2f}),"
          f" back at step {b['step']} (measured gain {b['measured_gain_of_last_switch']:.2f} of the predicted"
          f" {b['predicted_gain_of_last_switch']:.2f})")
    later = [e for e in d if e["step"] > b["step"]]
    if not later:
        fail("no evaluation after the switch back (the no-retry rule untested)")
    for e in later:
        if e["action"] != "keep" or e["best_other_layout"] == "tp 1 x pp 2 x dp 1, zero 0, micro-batch 8":
            fail("after the switch back it proposed pp 2 again or moved:", e)
    print("ok: kept after the switch back at steps", [e["step"] for e in later], "best other:",
          sorted({e["best_other_layout"] for e in later}))
for k in runs:
    s = json.load(open(f"{w}/{k}/summary.json")).get("adapt_decisions")
    if k != "even" and s != [l["adapt"] for l in lines[k] if "adapt" in l]:
        fail(f"{k}: summary.json adapt_decisions differ from the metrics' records (all adapters, in step order)")
for k, why in (("held", ("straggler: rank 1", "uneven data-parallel shares 3,1")), ("held_pp", ("imbalance: stage 1 ",))):
    h = evals(k)
    print(f"{k} run:", [(e["step"], e["action"], e.get("reason")) for e in h], "share moves at", share_moves(k))
    if not h:
        fail(f"the {k} run never evaluated")
    for e in h:
        if e["action"] != "keep" or not any(w_ in e.get("reason", "") for w_ in why):
            fail(f"{k}: rank 1 slowed and the fake prediction, and not kept with the guard's reason {why!r}:", e)
        if e["predicted_gain"] < e["needed_gain"] and "note" not in e:
            fail(f"{k}: the fake prediction did not clear the bar: the guard is untested there:", e)
for e in evals("slow"):  # the honest prediction keeps on its own (the guard aside)
    if e["predicted_gain"] >= e["needed_gain"] and "note" not in e:
        fail("rank 1 slowed, nothing faked: the prediction alone would have switched:", e)
for k, what in (("quiet", "nothing slow and nothing faked"), ("slow", "rank 1 slowed, nothing faked")):
    if not evals(k):
        fail(f"the {k} run never evaluated")
    if any(e["action"] != "keep" for e in evals(k)):
        fail(f"{what}, and still a switch:", evals(k))
    print(f"{k} run: evaluations at steps", [e["step"] for e in evals(k)], "gains",
          [round(e["predicted_gain"], 3) for e in evals(k)], "needed", [round(e["needed_gain"], 3) for e in evals(k)])
for k, to in (("to_mb", "tp 1 x pp 1 x dp 2, zero 0, micro-batch 16"), ("to_zero", "tp 1 x pp 1 x dp 2, zero 0, micro-batch 4")):
    e = evals(k)
    if not e or e[0]["action"] != "switch" or e[0]["to_layout"] != to:
        fail(f"{k}: the first evaluation did not switch to {to}:", e[:2])
    else:
        print(f"ok: {k}: switched to {to} at step {e[0]['step']};", [(x["step"], x["action"]) for x in e[1:]])
even = [l["loss"] for l in lines["even"]]
for k in ("decided", "held", "quiet", "slow", "to_mb", "to_zero"):
    got = [l["loss"] for l in lines[k]]
    if len(got) != len(even): fail(f"{k}: {len(got)} steps, the undisturbed run {len(even)}")
    switches = [e["step"] for e in evals(k) if e["action"] != "keep"]
    first_switch = switches[0] if switches else len(even)
    first_switch = min([first_switch] + share_moves(k))  # new shares from the step after: sums regroup
    for i, (a, b) in enumerate(zip(even, got)):
        if i + 1 <= first_switch and a != b:
            fail(f"{k} step {i + 1} (before any switch): loss {b!r}, the undisturbed run's {a!r}: not bitwise")
        if abs(a - b) > 1e-6 * abs(a):
            fail(f"{k} step {i + 1}: loss {b!r}, the undisturbed run's {a!r}")
    print(k, "max relative gap", max(abs(a - b) / abs(a) for a, b in zip(even, got)))
sys.exit(0 if ok else 1)
PY
at=$(sed -n 's/^gridtrain: step \([0-9]*\): adapt: layout tp 1 x pp 1 x dp 2, zero 0, micro-batch 8 .*: switching to tp 1 x pp 2 x dp 1, zero 0, micro-batch 8$/\1/p' "$work/decided.log" | head -1)
[ -n "$at" ] || fail "no switch line in the log: $(grep 'adapt' "$work/decided.log" | head -3)"
grep -q "^gridtrain: adapt: continuing at step $at on blocks .* (tp 1 x pp 2 x dp 1)" "$work/decided.log" ||
  fail "the switch was not made at step $at: $(grep 'continuing' "$work/decided.log" | head -2)"
echo "ok: $(grep -m1 'switching back' "$work/decided.log")"
grep -q "^gridtrain: step [0-9]*: adapt: layout tp 1 x pp 1 x dp 2, zero 0, micro-batch 8 .*; \(straggler: rank 1\|uneven data-parallel shares\).*: keeping the layout (the rebalancers' case)$" \
  "$work/held.log" || fail "no held line in the log: $(grep 'adapt' "$work/held.log" | head -3)"
echo "ok: $(grep -m1 "the rebalancers' case" "$work/held.log")"

# One rank has no other layout: refused before any step, one line.
"$bin" "${common[@]}" parallel.dp=1 output.dir="$work/bad" parallel.adapt=full >"$work/bad.log" 2>&1 &&
  fail "parallel.adapt = full on one rank was accepted"
grep -q "^gridtrain: error: config: parallel.adapt = \"full\" cannot run here: one rank has no other layout" "$work/bad.log" ||
  fail "no one-line error for one rank: $(tail -3 "$work/bad.log")"
[ ! -s "$work/bad/metrics.jsonl" ] || fail "steps were trained before the refusal"
echo "ok: refused: $(grep -m1 '^gridtrain: error' "$work/bad.log")"
