#pragma once
// The tensors of one rank (one pipeline stage, one TP slice) as ranges of flat buffers. The model declares its
// tensors (name, global shape, split dimension, decay, tie); the layout fixes their offsets in storage (=
// forward) order and pads the total so that it divides into equal DP shards of whole cache lines. Every flat
// buffer of the rank (working parameters, fp32 masters, gradients, AdamW moments, later masks and residuals)
// uses this one layout, so a tensor or a shard is the same element range in each of them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace gt {

enum class Init { Normal, Zeros, Ones, Uniform };  // Uniform: in [-std, std]

struct TensorSpec {
  std::string name;                  // "h.3.attn.qkv.w"
  std::vector<int64_t> global_shape;
  int split_dim = -1;                // dimension split across TP ranks; -1: replicated on every TP rank
  int64_t split_start = 0;           // this rank's start along split_dim
  int64_t split_len = 0;             // this rank's extent along split_dim
  // A key/value head replicated over TP ranks (llama, parallel.tp > model.n_kv_head; docs/model.md "Llama"):
  // along sel_dim the local tensor is the rows [sel_start, sel_start + sel_len) (this rank's query heads) followed
  // by the rows [tail_start, tail_start + tail_len) (the key and value head), a two-piece slice of the global
  // tensor. The tail is the same on `replicas` consecutive TP ranks; `replica` is this rank's place among them
  // (replicas - 1: the one whose copy counts in norms, gathers and checkpoints). sel_dim -1: none of this.
  int sel_dim = -1;
  int64_t sel_start = 0, sel_len = 0, tail_start = 0, tail_len = 0;
  int replicas = 1, replica = 0;
  Init init = Init::Zeros;
  double std = 0.0;                  // for Init::Normal; the bound for Init::Uniform
  bool decay = false;                // AdamW weight decay applies
  // sparsity.pattern = 2:4 masks it, in groups of 4 along its last dimension (the input dimension of a linear
  // weight, the input channels of a convolution's O x KH x KW x I): the model family says which tensors.
  bool sparse24 = false;
  int unit = 0;                      // forward-order unit: 0 embedding, 1..L blocks, L+1 head; for bucketing
  // >= 0: this rank's copy is tied to the tensor of the same name on that pipeline stage, which owns it (the
  // head's wte on the last stage is the embedding's wte of stage 0; the embedding group keeps them equal).
  int tied_to_stage = -1;
  size_t offset = 0;                 // into the flat buffers (set by TensorLayout)
  size_t size = 0;                   // local elements (set by TensorLayout)

  std::vector<int64_t> local_shape() const;
  std::vector<int64_t> local_start() const;  // hyperslab start in global coordinates
  int64_t global_size() const;
  // Global row-major index of local element i.
  int64_t global_index(int64_t local_i) const;
  // The local elements [begin, end) (offsets within the tensor) of the replicated tail; empty without one.
  // A copy that does not count (replica < replicas - 1) leaves them out of norms, gathers and checkpoints.
  bool has_replicated_tail() const { return sel_dim >= 0 && tail_len > 0 && replicas > 1; }
  int64_t tail_begin() const;
};

// An element range [begin, end) of the flat buffers.
struct Range {
  size_t begin = 0, end = 0;
  size_t size() const { return end - begin; }
};

class TensorLayout {
 public:
  // Elements per cache line of the smallest element type (2-byte halves): every shard starts on a line.
  static constexpr size_t kAlign = 32;

  TensorLayout() = default;
  // Tensors in the given order; the total is padded to a multiple of dp_size * kAlign elements (the padding
  // is zero in every buffer and belongs to no tensor).
  TensorLayout(std::vector<TensorSpec> tensors, int dp_size);

  const std::vector<TensorSpec>& tensors() const { return specs_; }
  const TensorSpec& spec(const std::string& name) const;
  bool has(const std::string& name) const;
  size_t used() const { return used_; }    // elements that belong to tensors
  size_t size() const { return padded_; }  // elements of every flat buffer, padding included
  int dp_size() const { return dp_size_; }
  // DP rank r's equal share of the padded buffer (what ZeRO partitions, what a reduce-scatter hands it).
  Range shard_range(int dp_rank) const;
  // Tensors [first, first + count) at their offsets in this layout, over the same flat buffers (size() and
  // used() unchanged): the view of one model chunk of a stage that holds several (interleaved pipeline).
  TensorLayout slice(size_t first, size_t count) const;

 private:
  std::vector<TensorSpec> specs_;
  // name -> index into specs_: a linear search per name made building the layout quadratic in the number of
  // tensors (12 per block: n_layer = 10000 spent minutes comparing names before the first step).
  std::unordered_map<std::string, size_t> index_;
  size_t used_ = 0, padded_ = 0;
  int dp_size_ = 1;
};

// Initial parameter values of the whole layout (padding 0): a pure function of (seed, tensor name, global
// element index), so every layout starts from the same global model. host: layout.size() elements.
template <class T>
void initial_params(const TensorLayout& layout, uint64_t seed, T* host);
// The same values for the elements r only (a ZeRO shard, or a chunk of one): element i at host[i - r.begin].
template <class T>
void initial_params(const TensorLayout& layout, uint64_t seed, T* host, Range r);

}  // namespace gt
