#pragma once
// Pipeline partitioning by measured or modelled cost: contiguous block ranges per stage that minimise the
// slowest stage. Pure functions (tests/plan/test_rebalance.cpp checks them against brute force).
#include <vector>

#include "src/plan/layout.hpp"

namespace gt::plan {

// The modelled cost of the units a stage computes, in FLOP-equivalents per token, forward + backward
// (docs/planner.md, "Stages"): a block 3 (24 h^2 + 4 s h) (Narayanan et al. 2021's forward FLOPs, backward
// twice that); the head 6 V h of GEMMs plus its cross-entropy, four fp32 passes over the V logits (16 V bytes);
// the embedding a gather and a position add (12 h bytes) and their scatter-add backward (16 h bytes). Bytes
// count as `flop_per_byte` FLOPs each: the machine balance at which a memory-bound kernel takes the time of a
// GEMM. kCpuFlopPerByte is this VM's core (sgemm 155 GFLOP/s over ~20 GB/s of streaming, cpu-2core.toml);
// GPUs are more lopsided (H100 bf16 ~300) but there the embedding stays < 1% of a block either way.
constexpr double kCpuFlopPerByte = 8.0;
struct UnitCosts {
  double block = 0, embedding = 0, head = 0;
};
UnitCosts modelled_unit_costs(const ModelShape& m, double flop_per_byte = kCpuFlopPerByte);
// The trainer's default partition (no parallel.stage_blocks): partition_by_cost over modelled_unit_costs.
std::vector<int> modelled_partition(const ModelShape& m, int stages);

// First block of each stage (size stages + 1, begin[stages] = blocks) minimising max over stages of
// sum(cost of its blocks) + first_extra (stage 0: embedding) + last_extra (last stage: head and loss).
// Every stage gets at least one block; ties go to the earlier cut (as src/train/schedule.cpp's
// partition_stages, which this generalises from equal to per-block costs). Throws gt::Error if blocks < stages.
std::vector<int> partition_by_cost(const std::vector<double>& block_cost, int stages, double first_extra,
                                   double last_extra);

// Cost of every stage of a partition.
std::vector<double> stage_costs(const std::vector<int>& begin, const std::vector<double>& block_cost,
                                double first_extra, double last_extra);

// Like partition_by_cost on stages of unequal speed (live rebalancing, parallel.adapt = rebalance): stage s
// takes stage_scale[s] seconds per unit of cost, so its time is stage_scale[s] x (its blocks' cost + its extras);
// the partition minimises the slowest stage's time. Exact dynamic programme over every cut, O(stages blocks^2):
// it runs on a window's measurements at most once a step, for tens of blocks. Ties: each stage, from the last back,
// starts at the earliest block that keeps the optimum (so among equal optima the later stages hold more blocks).
// Throws gt::Error if blocks < stages or the scales are not one positive number per stage.
std::vector<int> partition_by_speed(const std::vector<double>& block_cost, const std::vector<double>& stage_scale,
                                    double first_extra, double last_extra);

struct RebalanceProposal {
  std::vector<int> current, proposed;            // first block per stage (+ end)
  std::vector<double> current_cost, proposed_cost;  // per stage
  double gain = 1.0;     // slowest stage now / slowest stage proposed (>= 1)
  bool worth = false;    // gain exceeds the threshold
};

// From measured per-block forward+backward times (and the first/last stages' extra work), the partition
// that balances them and the predicted gain over `current`; `worth` when gain >= 1 + threshold.
RebalanceProposal propose_rebalance(const std::vector<double>& block_cost, double first_extra, double last_extra,
                                    const std::vector<int>& current, double threshold);

}  // namespace gt::plan
