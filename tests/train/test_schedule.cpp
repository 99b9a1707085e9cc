// Pipeline schedules and stage partitioning, checked as pure functions: order, activations in flight, and an
// event simulation of all stages together that would deadlock or reorder if the schedules did not fit.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>

#include "src/core/error.hpp"
#include "src/plan/memory.hpp"
#include "src/train/schedule.hpp"

using gt::PipeOp;
using gt::Schedule;

namespace {

// Runs every stage's op list with unit cost per op; an op starts when its inputs exist (forward m on stage s
// needs forward m of stage s-1; backward m needs backward m of stage s+1 and forward m of stage s). Returns
// the makespan, or -1 on deadlock.
int simulate(Schedule sch, int P, int M) {
  std::vector<std::vector<PipeOp>> ops(P);
  for (int s = 0; s < P; ++s) ops[s] = gt::pipeline_schedule(sch, P, s, M);
  std::map<std::tuple<int, int, int>, int> done;  // (stage, kind, m) -> finish time
  std::vector<size_t> pc(P, 0);
  std::vector<int> free_at(P, 0);
  int remaining = 2 * P * M;
  for (int guard = 0; remaining > 0 && guard < 100000; ++guard) {
    bool progressed = false;
    for (int s = 0; s < P; ++s) {
      if (pc[s] == ops[s].size()) continue;
      const PipeOp& op = ops[s][pc[s]];
      int ready = free_at[s];
      bool ok = true;
      auto need = [&](int st, int kind, int m) {
        auto it = done.find({st, kind, m});
        if (it == done.end()) ok = false;
        else ready = std::max(ready, it->second);
      };
      if (op.kind == PipeOp::Forward) {
        if (s > 0) need(s - 1, 0, op.micro_batch);
      } else {
        need(s, 0, op.micro_batch);
        if (s < P - 1) need(s + 1, 1, op.micro_batch);
      }
      if (!ok) continue;
      done[{s, op.kind == PipeOp::Forward ? 0 : 1, op.micro_batch}] = ready + 1;
      free_at[s] = ready + 1;
      ++pc[s];
      --remaining;
      progressed = true;
    }
    if (!progressed) return -1;
  }
  int end = 0;
  for (int t : free_at) end = std::max(end, t);
  return end;
}

// The interleaved schedule's simulation: chunk c of stage s is virtual stage j = c P + s; forward (c, m) needs
// forward m of virtual stage j - 1 (stage (j - 1) mod P), backward (c, m) needs its own forward and backward m of
// virtual stage j + 1. A chunk's forward costs f, its backward b (time units). Returns the makespan, -1 on deadlock.
int simulate_interleaved(int P, int M, int V, int f, int b) {
  std::vector<std::vector<PipeOp>> ops(P);
  for (int s = 0; s < P; ++s) ops[s] = gt::pipeline_schedule(Schedule::Interleaved, P, s, M, V);
  std::map<std::tuple<int, int, int>, int> done;  // (virtual stage, kind, m) -> finish time
  std::vector<size_t> pc(P, 0);
  std::vector<int> free_at(P, 0);
  int remaining = 2 * P * M * V;
  while (remaining > 0) {
    bool progressed = false;
    for (int s = 0; s < P; ++s) {
      if (pc[s] == ops[s].size()) continue;
      const PipeOp& op = ops[s][pc[s]];
      const int j = op.chunk * P + s;
      int ready = free_at[s];
      bool ok = true;
      auto need = [&](int vs, int kind) {
        auto it = done.find({vs, kind, op.micro_batch});
        if (it == done.end()) ok = false;
        else ready = std::max(ready, it->second);
      };
      if (op.kind == PipeOp::Forward) {
        if (j > 0) need(j - 1, 0);
      } else {
        need(j, 0);
        if (j < P * V - 1) need(j + 1, 1);
      }
      if (!ok) continue;
      const int end = ready + (op.kind == PipeOp::Forward ? f : b);
      done[{j, op.kind == PipeOp::Forward ? 0 : 1, op.micro_batch}] = end;
      free_at[s] = end;
      ++pc[s];
      --remaining;
      progressed = true;
    }
    if (!progressed) return -1;
  }
  return *std::max_element(free_at.begin(), free_at.end());
}

}  // namespace

// Interleaved 1F1B: every (chunk, micro-batch) forward and backward exactly once on every stage, each backward after
// its forward; with one chunk it is 1F1B; m not a multiple of p is refused (Megatron's rule).
TEST(PipelineSchedule, InterleavedEveryChunkOnce) {
  for (int P = 1; P <= 4; ++P)
    for (int V = 1; V <= 3; ++V)
      for (int M = P; M <= 3 * P; M += P)
        for (int s = 0; s < P; ++s) {
          auto ops = gt::pipeline_schedule(Schedule::Interleaved, P, s, M, V);
          ASSERT_EQ(ops.size(), size_t(2 * M * V));
          std::map<std::pair<int, int>, int> f, b;
          for (size_t i = 0; i < ops.size(); ++i) {
            auto& seen = ops[i].kind == PipeOp::Forward ? f : b;
            ASSERT_LT(ops[i].chunk, V);
            ASSERT_TRUE(seen.insert({{ops[i].chunk, ops[i].micro_batch}, int(i)}).second) << "repeated";
          }
          ASSERT_EQ(f.size(), size_t(M * V));
          for (auto& [key, at] : b) EXPECT_LT(f.at(key), at);
        }
  for (int P = 1; P <= 4; ++P)
    for (int s = 0; s < P; ++s)
      EXPECT_EQ(gt::pipeline_schedule(Schedule::Interleaved, P, s, 8, 1), gt::pipeline_schedule(Schedule::OneFOneB, P, s, 8));
  EXPECT_THROW(gt::pipeline_schedule(Schedule::Interleaved, 4, 0, 6, 2), gt::Error);
}

// All stages together never deadlock, and the makespan is the ideal 3 m v chunk-units (forward 1, backward 2) plus
// the bubble (p - 1) (1 + 2): (p - 1) / (v m) of the ideal (Narayanan et al. 2021), which is the planner's
// interleaved bubble; its in-flight memory is the planner's in_flight_stages (Megatron's p (1 + (p-1)/(p v)) on
// stage 0), in chunk-micro-batches of 1/v of the stage.
TEST(PipelineSchedule, InterleavedBubbleAndMemoryAreThePlanners) {
  for (int P = 2; P <= 4; ++P)
    for (int V = 2; V <= 3; ++V)
      for (int M = P; M <= 4 * P; M += P) {
        const int span = simulate_interleaved(P, M, V, 1, 2);
        ASSERT_GT(span, 0) << "deadlock P=" << P << " V=" << V << " M=" << M;
        const int ideal = 3 * M * V;
        EXPECT_EQ(span, ideal + 3 * (P - 1)) << "P=" << P << " V=" << V << " M=" << M;
        for (int s = 0; s < P; ++s) {
          gt::plan::Layout l;
          l.pp = P;
          l.vp = V;
          l.micro_batches = M;
          const int held = gt::max_in_flight(gt::pipeline_schedule(Schedule::Interleaved, P, s, M, V));
          EXPECT_NEAR(gt::plan::in_flight_stages(l, s) * V, double(held), 1e-9) << P << " " << V << " " << M << " " << s;
        }
      }
}

TEST(PipelineSchedule, EveryMicroBatchOnceForwardBeforeBackward) {
  for (Schedule sch : {Schedule::GPipe, Schedule::OneFOneB})
    for (int P = 1; P <= 5; ++P)
      for (int M = 1; M <= 8; ++M)
        for (int s = 0; s < P; ++s) {
          auto ops = gt::pipeline_schedule(sch, P, s, M);
          ASSERT_EQ(ops.size(), size_t(2 * M));
          std::vector<int> f(M, -1), b(M, -1);
          for (size_t i = 0; i < ops.size(); ++i) {
            auto& slot = ops[i].kind == PipeOp::Forward ? f : b;
            ASSERT_EQ(slot[ops[i].micro_batch], -1) << "micro-batch repeated";
            slot[ops[i].micro_batch] = int(i);
          }
          for (int m = 0; m < M; ++m) EXPECT_LT(f[m], b[m]);
          for (int m = 1; m < M; ++m) EXPECT_LT(b[m - 1], b[m]) << "backwards out of micro-batch order";
        }
}

TEST(PipelineSchedule, ActivationsInFlight) {
  for (int P = 1; P <= 6; ++P)
    for (int M = 1; M <= 10; ++M)
      for (int s = 0; s < P; ++s) {
        EXPECT_EQ(gt::max_in_flight(gt::pipeline_schedule(Schedule::GPipe, P, s, M)), M);
        EXPECT_EQ(gt::max_in_flight(gt::pipeline_schedule(Schedule::OneFOneB, P, s, M)), std::min(P - s, M))
            << "P=" << P << " M=" << M << " s=" << s;
      }
}

TEST(PipelineSchedule, AllStagesTogetherFinishWithTheIdealBubble) {
  for (Schedule sch : {Schedule::GPipe, Schedule::OneFOneB})
    for (int P = 1; P <= 5; ++P)
      for (int M = 1; M <= 8; ++M) {
        const int span = simulate(sch, P, M);
        ASSERT_GT(span, 0) << "deadlock P=" << P << " M=" << M;
        // Unit-cost ops: the ideal makespan is 2 (M + P - 1), i.e. bubble (P-1)/(M+P-1).
        EXPECT_EQ(span, 2 * (M + P - 1)) << "P=" << P << " M=" << M;
        EXPECT_NEAR(1.0 - double(2 * M) / span, gt::bubble_fraction(P, M), 1e-12);
      }
}

TEST(StagePartition, ContiguousNonEmptyAndBalanced) {
  for (int stages = 1; stages <= 6; ++stages)
    for (int blocks = stages; blocks <= 14; ++blocks) {
      auto b = gt::partition_stages(blocks, stages, 1.0, 0.0, 0.0);
      ASSERT_EQ(b.size(), size_t(stages + 1));
      EXPECT_EQ(b.front(), 0);
      EXPECT_EQ(b.back(), blocks);
      int maxn = 0;
      for (int s = 0; s < stages; ++s) {
        EXPECT_GE(b[s + 1] - b[s], 1);
        maxn = std::max(maxn, b[s + 1] - b[s]);
      }
      EXPECT_EQ(maxn, (blocks + stages - 1) / stages);  // uniform costs: the best max is ceil(blocks/stages)
    }
}

TEST(StagePartition, HeavyHeadGetsFewerBlocks) {
  // 12 blocks on 4 stages, head worth 2 blocks: the last stage should hold fewer blocks than the first.
  auto b = gt::partition_stages(12, 4, 1.0, 0.0, 2.0);
  EXPECT_LT(b[4] - b[3], b[1] - b[0]);
  double worst = 0;
  for (int s = 0; s < 4; ++s) worst = std::max(worst, (b[s + 1] - b[s]) + (s == 3 ? 2.0 : 0.0));
  EXPECT_LE(worst, 4.0);  // total cost 14 over 4 stages: no partition beats a max of 4
}

TEST(StagePartition, FewerBlocksThanStagesIsAnError) {
  EXPECT_THROW(gt::partition_stages(3, 4, 1.0, 0.0, 0.0), gt::Error);
}

// ---- point-to-point groups (pipeline_p2p) under NCCL's blocking rules (p2p_deadlock) --------------------------

namespace {

std::vector<std::vector<gt::P2PGroup>> all_stages(gt::Schedule s, int p, int m) {
  std::vector<std::vector<gt::P2PGroup>> st;
  for (int k = 0; k < p; ++k) st.push_back(gt::pipeline_p2p(gt::pipeline_schedule(s, p, k, m), p, k));
  return st;
}

// What the runner issued before the groups: every send and every receive alone, at the point of its op.
std::vector<std::vector<gt::P2PGroup>> lone_messages(gt::Schedule s, int p, int m) {
  std::vector<std::vector<gt::P2PGroup>> st;
  for (int k = 0; k < p; ++k) {
    std::vector<gt::P2PGroup> g;
    for (const gt::P2PMsg& msg : [&] {
           std::vector<gt::P2PMsg> flat;
           for (const gt::P2PGroup& grp : gt::pipeline_p2p(gt::pipeline_schedule(s, p, k, m), p, k))
             for (const gt::P2PMsg& x : grp) flat.push_back(x);
           return flat;
         }())
      g.push_back({msg});
    st.push_back(g);
  }
  return st;
}

}  // namespace

// Every schedule, stage count and micro-batch count the trainer accepts up to 8 x 16 runs to the end, and every
// send meets the receive of its own tag.
TEST(PipelineP2P, GroupedMessagesNeverDeadlock) {
  for (gt::Schedule s : {gt::Schedule::GPipe, gt::Schedule::OneFOneB})
    for (int p = 1; p <= 8; ++p)
      for (int m = 1; m <= 16; ++m) EXPECT_EQ(gt::p2p_deadlock(all_stages(s, p, m)), "") << "p=" << p << " m=" << m;
}

// The checker can fail: 1F1B with each message alone deadlocks as soon as two stages send to each other in one
// slot (p >= 2 and m >= 2), which is what a GPU run over NCCL would have met; GPipe alone does not.
TEST(PipelineP2P, LoneMessagesDeadlockUnder1F1B) {
  for (int p = 2; p <= 6; ++p)
    for (int m = 2; m <= 8; ++m)
      EXPECT_NE(gt::p2p_deadlock(lone_messages(gt::Schedule::OneFOneB, p, m)), "") << "p=" << p << " m=" << m;
  for (int p = 2; p <= 6; ++p)
    for (int m = 1; m <= 8; ++m)
      EXPECT_EQ(gt::p2p_deadlock(lone_messages(gt::Schedule::GPipe, p, m)), "") << "p=" << p << " m=" << m;
}

// Groups pair a send with the receive of the op after it, and the last op's send comes alone at the end.
TEST(PipelineP2P, SendJoinsTheNextReceive) {
  // stage 1 of 3, 1F1B, 3 micro-batches: F0 F1 B0 F2 B1 B2 (warm-up 1)
  const auto g = gt::pipeline_p2p(gt::pipeline_schedule(gt::Schedule::OneFOneB, 3, 1, 3), 3, 1);
  ASSERT_EQ(g.size(), 7u);
  EXPECT_EQ(g[0], (gt::P2PGroup{{false, 0, 0}}));                  // recv act 0
  EXPECT_EQ(g[1], (gt::P2PGroup{{true, 2, 0}, {false, 0, 2}}));    // send act 0, recv act 1
  EXPECT_EQ(g[2], (gt::P2PGroup{{true, 2, 2}, {false, 2, 1}}));    // send act 1, recv grad 0
  EXPECT_EQ(g[3], (gt::P2PGroup{{true, 0, 1}, {false, 0, 4}}));    // send grad 0, recv act 2
  EXPECT_EQ(g[6], (gt::P2PGroup{{true, 0, 5}}));                   // send grad 2
}

// A mismatch is reported, not taken as progress: stage 1 expects tag 2 where stage 0 sends tag 0.
TEST(PipelineP2P, TagMismatchIsReported) {
  std::vector<std::vector<gt::P2PGroup>> st = {{{{true, 1, 0}}}, {{{false, 0, 2}}}};
  EXPECT_NE(gt::p2p_deadlock(st).find("meets tag"), std::string::npos);
}
