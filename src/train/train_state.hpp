#pragma once
// TrainState: every flat buffer a rank trains with, over one TensorLayout, each chosen by its typed id (the one
// table of ids, names on disk, ledger parts and type rules: state_buffers.hpp). The standard buffers:
//   Params   working parameters the model computes with (the run's working type: fp32, bf16 or fp16)
//   Master   fp32 parameters the optimizer updates (only when the working type is not fp32; else = Params)
//   Grads    fp32 gradient accumulation buffer (micro-batches accumulate here, the DP all-reduce sums it; ZeRO-2/3
//            reduce-scatter it into GradsShard, or with staged gradients it does not exist: zero.hpp)
//   AdamM, AdamV   AdamW moments, fp32
// Later features add their own (masks, error-feedback residuals) with add_buffer(). Each buffer has its own
// element type, memory space and extent: the layout's elements it holds, all of them or one DP shard (ZeRO),
// at data[i - extent.begin], so a tensor or a DP shard (layout().shard_range) is the same element range of the
// layout in every buffer that holds it.
#include <map>
#include <memory>
#include <string>

#include "kernels/half.hpp"
#include "kernels/kokkos_compat.hpp"
#include "src/comm/comm.hpp"
#include "src/core/config.hpp"
#include "src/core/error.hpp"
#include "src/grid/grid.hpp"
#include "src/model/tensor_layout.hpp"
#include "src/train/state_buffers.hpp"

namespace gt {

enum class MemSpace { Device, Host };  // Host: e.g. optimizer state offloaded to CPU memory on GPU builds

struct StateBuffer {
  Buffer id = Buffer::Params;
  std::string name;  // buffer_name(id): labels and messages
  DType dtype = DType::F32;  // BF16/F16: a 16-bit working copy (bf16_t/fp16_t elements)
  MemSpace space = MemSpace::Device;
  void* data = nullptr;  // extent.size() elements of dtype
  size_t bytes = 0;
  // The flat elements this buffer holds: element i (extent.begin <= i < extent.end) is data[i - extent.begin].
  // All of the layout, or one DP shard (ZeRO: moments, reduced gradients).
  Range extent;
};

// Whether this rank's copy of a tensor is the one that counts for the global model within its model-parallel
// group: TP-split tensors on every TP rank (each holds a distinct slice), replicated ones on TP rank 0, a tied
// copy (the head's wte off stage 0) never. Global norms count owned elements once; checkpoints and gathers
// take owned elements from DP rank 0.
bool owner(const TensorSpec& tensor, const Grid& grid);
// The owned elements of an owned tensor, as a range of the flat buffers: all of it, except on the replicas of a
// replicated key/value head (llama, tp > n_kv_head) but the last, whose copy of the key/value rows (the tensor's
// tail) counts once (src/train/kv_replicas.hpp: the last replica's rows continue its query rows in the checkpoint).
Range owned_range(const TensorSpec& tensor);

// Which elements the standard buffers hold: the working copy, the optimizer's buffers (AdamW moments and the
// fp32 master of a 16-bit run), and whether the full gradient buffer exists. All of the layout, or one DP shard
// under ZeRO (src/train/dp/zero.hpp, state_extents): the shards are allocated directly, so a sharded state never
// holds the full buffers, not even at start-up.
struct StateExtents {
  Range working, optimizer;
  bool full_grads = true;
};

class TrainState {
 public:
  // Allocates the standard buffers (zeroed) over the layout and fills the parameters from the pure init function:
  // the fp32 master, and a 16-bit working copy rounded from the same values (to nearest even) when the working
  // type is not fp32. The second form holds only the extents' elements and computes only their initial values.
  TrainState(TensorLayout layout, Precision working, uint64_t seed);
  TrainState(TensorLayout layout, Precision working, uint64_t seed, const StateExtents& extents);
  ~TrainState();
  TrainState(const TrainState&) = delete;
  TrainState& operator=(const TrainState&) = delete;

  const TensorLayout& layout() const { return layout_; }
  Precision working() const { return working_; }

  // A new zeroed buffer of layout().size() elements; one per id, of a type its rule allows (state_buffers.hpp).
  StateBuffer& add_buffer(Buffer id, DType dtype, MemSpace space = MemSpace::Device);
  // A new zeroed buffer of only the elements `extent` (a DP shard: ZeRO).
  StateBuffer& add_buffer(Buffer id, DType dtype, MemSpace space, Range extent);
  // Replaces a buffer by one holding only `extent`, keeping the values there (ZeRO-1: the AdamW moments and
  // the fp32 master of this rank's shard).
  void shard_buffer(Buffer id, Range extent);
  // Frees a buffer (ZeRO-2/3 staging its gradients: the full Grads goes). Pointers to it are stale.
  void remove_buffer(Buffer id);
  bool has_buffer(Buffer id) const { return buffers_.count(id) > 0; }
  StateBuffer& buffer(Buffer id);
  // The buffer's elements as T*; throws if the buffer does not hold T.
  template <class T> T* data(Buffer id);

  // The buffer holding the fp32 parameters the optimizer updates (and checkpoints save): Master when there is
  // one, else the working copy itself (fp32 without sparsity).
  Buffer master_id() const { return has_buffer(Buffer::Master) ? Buffer::Master : Buffer::Params; }
  void* params() { return buffer(Buffer::Params).data; }
  float* master() { return data<float>(master_id()); }
  float* grads() { return data<float>(Buffer::Grads); }
  float* adam_m() { return data<float>(Buffer::AdamM); }
  float* adam_v() { return data<float>(Buffer::AdamV); }
  void zero_grads();
  // The working copy from the master over the elements r (within the master's extent): round to nearest even
  // for a 16-bit working type; nothing to do in fp32 (the params are the master).
  void refresh_params(Range r);
  // Moves a buffer into caller-owned memory of buffer(id).bytes, keeping its values: the DP communicator's
  // registered region, where the shm all-reduce and ZeRO on one node need no copies (src/comm/node_shm.hpp).
  // The memory must outlive the state; pointers to the buffer taken before are stale.
  void move_buffer_to(Buffer id, void* memory);
  // Bytes of all buffers (the memory ledger).
  size_t bytes() const;

 private:
  struct Storage;
  void fill_initial(const StateBuffer& b, uint64_t seed);
  TensorLayout layout_;
  Precision working_;
  std::map<Buffer, StateBuffer> buffers_;
  std::map<Buffer, std::unique_ptr<Storage>> storage_;
};

// The DType of a buffer element type, the 16-bit storage types included.
template <class T>
constexpr DType state_dtype() {
  if constexpr (std::is_same_v<T, bf16_t>) return DType::BF16;
  else if constexpr (std::is_same_v<T, fp16_t>) return DType::F16;
  else return dtype_of<T>();
}

template <class T>
T* TrainState::data(Buffer id) {
  StateBuffer& b = buffer(id);
  if (b.dtype != state_dtype<T>()) throw Error("train state: buffer '" + b.name + "' does not hold the requested type");
  return static_cast<T*>(b.data);
}

}  // namespace gt
