#pragma once
// Data-parallel gradient buckets: contiguous ranges of the flat gradient buffer, formed in reverse storage
// order (the order backward completes them), each all-reduced over the DP group as soon as every tensor in
// it is final, while the rest of backward goes on. With compress.method = topk each bucket is instead
// compressed (error feedback + top-k, src/train/compress) when it is final, and its collectives overlap the
// rest of backward the same way; with compress.local_clip set, everything waits for finish() (the clip needs
// the norm of this rank's whole gradient first).
// Under ZeRO-2 each bucket is reduce-scattered: every DP rank receives the sum of the bucket's piece that lies
// in its shard, into its shard-sized buffer. With a 16-bit wire type each bucket travels as bf16/fp16.
#include <functional>
#include <memory>
#include <vector>

#include "src/comm/comm.hpp"
#include "src/model/tensor_layout.hpp"
#include "src/train/compress/topk_allreduce.hpp"
#include "src/train/compress/topk_device.hpp"

namespace gt {

class GradBuckets {
 public:
  GradBuckets(const std::vector<TensorSpec>& tensors, size_t bucket_bytes, size_t elem_bytes);
  // ZeRO-2: reduce-scatter each bucket over the shards of `layout` into shard_grads, which holds this rank's
  // shard (element i of the flat buffer at shard_grads[i - shard.begin]).
  void reduce_scatter_into(const TensorLayout& layout, Range shard, float* shard_grads);

  // compress.method = topk: every bucket by compress::topk_allreduce, its residual at the same offsets of
  // `residual` (a TrainState buffer of the gradient's size). density: the target after DGC's warm-up.
  struct Compression {
    compress::TopkOptions topk;
    double density = 0.04;
    int warmup_steps = 0;
    float* residual = nullptr;
    // DGC's local clipping: this rank's gradient (all its buckets, before error feedback) scaled down to at
    // most this L2 norm (times the loss scale of begin_step); 0: off.
    double local_clip = 0;
    // Launch buckets during backward (unit_done); false: all in finish(), as before the overlap (tests).
    bool overlap = true;
  };
  void set_compression(const Compression& c);
  // compress.method = bf16 | fp16 (or parallel.grad_reduce_dtype = bf16): each bucket rounded to `t` into
  // `staging` (a TrainState buffer of the gradient's size in `t`, same offsets), all-reduced in `t`, widened
  // back in finish() (src/train/half_wire.hpp). Not with ZeRO-2 or top-k.
  void set_wire(DType t, uint16_t* staging) { wire_ = t; staging_ = staging; }
  // What the last step's compressed buckets did: bytes this rank sent (transport formulas), entries sent,
  // entries in all buckets, and the residual's squared norm after the step.
  struct CompressStats {
    double wire_bytes = 0, residual_norm2 = 0;
    size_t sent = 0, total = 0;
  };
  const CompressStats& compress_stats() const { return stats_; }
  // The last step on the wire, for any method: bytes this rank sent (top-k: its transports' formulas; dense
  // buckets: ring all-reduces, 2(P-1)/P * v * n, or reduce-scatters under ZeRO-2, (P-1)/P * 4 * n), what dense
  // fp32 all-reduces of the same buckets send, and the residual's L2 norm (-1 without top-k).
  struct WireStats {
    double bytes = 0, dense_fp32_bytes = 0, residual_norm = -1;
  };
  WireStats wire_stats(int ranks) const;

  // Start of the last micro-batch's backward of step `step` (counted from 0).
  void begin_step(long step = 0, double loss_scale = 1);
  // Backward finished unit u (units complete from the highest down): launch every bucket now complete and
  // give the ones in flight a chance to progress.
  void unit_done(int unit, Comm& dp, float* grads);
  // Launch what is left and wait for all; called before the optimizer. before_rest runs first (ZeRO-2 with a
  // tied embedding: its gradient summed over the embedding group before the DP reduction of its bucket).
  void finish(Comm& dp, float* grads, const std::function<void()>& before_rest = {});

  struct Bucket {
    size_t begin = 0, end = 0;  // element range in the flat store
    int min_unit = 0;
  };
  const std::vector<Bucket>& buckets() const { return buckets_; }
  size_t launched() const { return next_; }  // buckets launched so far this step (tests check the overlap)

 private:
  void clip_local(float* grads) const;
  RequestPtr launch(size_t bucket, Comm& dp, float* grads);
  RequestPtr launch_compressed(size_t bucket, Comm& dp, float* grads);

  std::vector<Bucket> buckets_;  // in launch order (end of the buffer first)
  bool compress_ = false;
  DType wire_ = DType::F32;
  uint16_t* staging_ = nullptr;
  Compression compression_;
  std::vector<std::unique_ptr<compress::TopkWorkspace>> workspaces_;  // per bucket: top-k's device buffers
  CompressStats stats_;
  long step_ = 0;
  double loss_scale_ = 1;
  const TensorLayout* scatter_layout_ = nullptr;  // ZeRO-2 when set
  Range shard_;
  float* shard_grads_ = nullptr;
  std::vector<RequestPtr> reqs_;
  size_t next_ = 0;              // first bucket not yet launched
};

}  // namespace gt
