#pragma once
// Pipeline schedules and stage partitioning: pure functions that tests check without running a model.
#include <string>
#include <vector>

namespace gt {

enum class Schedule { GPipe, OneFOneB, Interleaved };
Schedule parse_schedule(const std::string& name);  // "gpipe" | "1f1b" | "interleaved"

struct PipeOp {
  enum Kind { Forward, Backward } kind;
  int micro_batch;
  int chunk = 0;  // interleaved: which of the stage's model chunks (virtual stage chunk x stages + stage)
  bool operator==(const PipeOp& o) const { return kind == o.kind && micro_batch == o.micro_batch && chunk == o.chunk; }
};

// The order of forward and backward passes that `stage` (0-based of `stages`) runs over `micro_batches`.
// GPipe: all forwards, then all backwards. 1F1B: (stages - stage - 1) warm-up forwards, then alternate one
// forward and one backward, then the remaining backwards. Backwards run in micro-batch order on every stage,
// so the sends of one stage meet the receives of the next in the same order.
//
// Interleaved 1F1B (Narayanan et al. 2021, section 2.2; Megatron's forward_backward_pipelining_with_interleaving):
// each stage holds `chunks` model chunks, chunk c of stage s being virtual stage c x stages + s, so a micro-batch
// passes every stage `chunks` times. Forward k (of m x chunks) runs chunk (k mod (p v)) / p on micro-batch
// (k / (p v)) p + k mod p; backward k the chunks in reverse; 2 (p - s - 1) + (v - 1) p warm-up forwards, then one
// forward and one backward alternately, then the remaining backwards. Needs m a multiple of p (as Megatron);
// bubble (p - 1) / (v m) of the ideal time. chunks = 1 is 1F1B.
std::vector<PipeOp> pipeline_schedule(Schedule s, int stages, int stage, int micro_batches, int chunks = 1);

// Point-to-point traffic of a stage, as the pipeline runner issues it. Tag 2m: micro-batch m's activations to the
// next stage; 2m + 1: its activation gradients to the previous one.
struct P2PMsg {
  bool send;
  int peer;  // stage index
  int tag;
  bool operator==(const P2PMsg& o) const { return send == o.send && peer == o.peer && tag == o.tag; }
};
using P2PGroup = std::vector<P2PMsg>;  // issued together (NCCL: one ncclGroupStart/End)

// groups[i] is issued before op i: the send of op i - 1's result (if it sends) together with op i's receive (if it
// receives); groups[ops.size()] holds the last op's send. In 1F1B's steady state a stage sends its activations
// forward while the next stage sends gradients back; on NCCL a lone send blocks its stream until the peer's receive
// runs, so two such sends would each wait for a receive that the other's stream holds behind its own send, forever.
// Grouped with the receive that follows (Megatron's send_forward_recv_backward and send_backward_recv_forward),
// each send meets its receive; a send not followed by a receive still leaves at once, so the warm-up forwards
// stream to the next stage. p2p_deadlock proves it for every schedule (tests/train/test_schedule.cpp).
std::vector<P2PGroup> pipeline_p2p(const std::vector<PipeOp>& ops, int stages, int stage);

// Runs every stage's groups under NCCL's rules: groups execute in order on the stage's stream; a send and the
// receive it matches (the k-th from stage a to b meets the k-th at b from a; NCCL has no tags) complete together,
// once both are in their stage's executing group; a group ends when all its messages did. Returns "" when all
// stages finish, else what is stuck (or which send met a receive of another tag).
std::string p2p_deadlock(const std::vector<std::vector<P2PGroup>>& stages);

// Largest number of micro-batches whose activations `stage` holds at once under the schedule (interleaved:
// chunk-micro-batches, each 1/chunks of the stage's activations).
int max_in_flight(const std::vector<PipeOp>& ops);

// Pipeline bubble of the schedule in ideal (uniform-cost) time: (p - 1) / (m + p - 1).
double bubble_fraction(int stages, int micro_batches);

// Contiguous ranges of blocks per stage, [begin[s], begin[s+1]), that minimise the largest stage cost where
// a block costs `block_cost`, the first stage adds `first_extra` (embedding) and the last `last_extra`
// (ln_f, head, loss). Every stage gets at least one block. Throws gt::Error if blocks < stages.
std::vector<int> partition_stages(int blocks, int stages, double block_cost, double first_extra, double last_extra);

}  // namespace gt
