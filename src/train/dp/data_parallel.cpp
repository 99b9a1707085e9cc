#include "src/train/dp/data_parallel.hpp"

#include "src/core/error.hpp"
#include "src/train/dp/half_wire.hpp"

namespace gt {

DataParallel::Plan DataParallel::plan(const Config& cfg, int pp, int dp_rank, int dp, const TensorLayout& layout) {
  Plan p;
  p.zero = ZeroPlan(cfg.parallel.zero, layout, dp_rank, dp);
  p.staged_grads = ZeroGradStaging::applies(p.zero, cfg.train.micro_batches, pp);
  p.extents = state_extents(p.zero, layout.size(), p.staged_grads);
  return p;
}

DataParallel::DataParallel(const Config& cfg, Grid& grid, TrainState& state, StageModel& model, Plan plan,
                           bool tied_embed)
    : cfg_(cfg), comm_(grid.dp()), state_(state), model_(model), plan_(std::move(plan)) {
  apply_zero_plan(state_, plan_.zero);
  // Staged gradients: the tied wte in chunks of rows no larger than a block, so neither its gradient nor (zero 3)
  // its gathered parameters are ever held whole (unit_spans: row-chunk units).
  const bool staged = plan_.staged_grads;
  const size_t chunk_rows = !staged || cfg_.model.llama() ? 0  // Llama's wte is not tied
                            : cfg_.parallel.wte_chunk_rows > 0 ? size_t(cfg_.parallel.wte_chunk_rows)
                                                               : wte_chunk_rows(state_.layout());
  const std::map<int, UnitSpan> units = unit_spans(state_.layout(), chunk_rows);
  if (staged) staging_ = std::make_unique<ZeroGradStaging>(state_, plan_.zero, chunk_rows);
  if (comm_.size() > 1 && exec_on_host) build_shared_memory(units);
  const ConfigChoices choice = cfg_.choices();
  const DType wire = grad_wire_dtype(choice.compress, choice.grad_reduce_dtype);
  if (staging_ && wire != DType::F32) staging_->set_wire(wire);  // after attach: shm sums need no 16-bit buffers
  if (plan_.zero.stage >= 3) {  // the working parameters are a shard now, the model reads gathered units
    gather_ = std::make_unique<ZeroGather>(state_, plan_.zero, comm_, chunk_rows);
    if (shm_ && staging_) gather_->attach(shm_.get());
  }
  attach_model(chunk_rows);
  if (comm_.size() > 1) build_buckets(tied_embed);
}

DataParallel::~DataParallel() = default;

// On CPU builds with every DP rank on one node (parallel.allreduce=shm) the buffers the DP collectives read move
// into the DP group's shared region (src/comm/node_shm.hpp), where they need no copy and no MPI progress: the full gradient
// buffer the shm all-reduce sums in place (zero 0, 1); the working parameters whose shards the ranks copy from each
// other after the update (zero 1, 2); the staging buffers of staged gradients and, at zero 3, the parameter shard
// the units are gathered from. Collective over dp; elsewhere (several nodes, parallel.allreduce=mpi|ring) nothing
// moves and the MPI path runs.
void DataParallel::build_shared_memory(const std::map<int, UnitSpan>& units) {
  const int stage = plan_.zero.stage;
  std::vector<Buffer> moved;
  if (stage <= 1) moved.push_back(Buffer::Grads);
  if (stage == 1 || stage == 2 || (stage == 3 && staging_)) moved.push_back(Buffer::Params);
  if (staging_)
    for (Buffer b : ZeroGradStaging::buffers()) moved.push_back(b);
  shm_ = share_buffers(comm_, state_, moved, units.begin()->first, units.rbegin()->first);
  if (shm_ && staging_) staging_->attach(shm_.get());
}

// The model bound again where a buffer moved (into the shared region), was sharded (stage 3) or went (staged
// gradients: no full buffer), and given the units' parameter source (stage 3) and gradient sink (staged).
void DataParallel::attach_model(size_t chunk_rows) {
  if (shm_ || staging_ || gather_)
    model_.bind(state_.params(), state_.has_buffer(Buffer::Grads) ? state_.grads() : nullptr);
  if (staging_ || gather_)
    model_.set_unit_io(UnitIO{gather_.get(), staging_.get(), state_.layout().has("wte") ? chunk_rows : 0});
}

void DataParallel::build_buckets(bool tied_embed) {
  std::vector<TensorSpec> tensors = state_.layout().tensors();
  // ZeRO-2 reduces the tied wte over DP before the embedding group could sum the two copies, so its bucket
  // waits for the end of backward, where that sum comes first (finish's before_rest).
  if (plan_.zero.stage >= 2 && tied_embed)
    for (TensorSpec& t : tensors)
      if (t.name == "wte") t.unit = -1;
  buckets_ = std::make_unique<GradBuckets>(tensors, static_cast<size_t>(cfg_.parallel.bucket_mb * 1048576.0),
                                           sizeof(float));
  buckets_->set_reducer(make_reducer());
}

// One reducer per strategy (bucket_reducers.hpp), chosen here from the config and the ZeRO stage.
std::unique_ptr<BucketReducer> DataParallel::make_reducer() {
  const ConfigChoices choice = cfg_.choices();
  const DType wire = grad_wire_dtype(choice.compress, choice.grad_reduce_dtype);
  const bool scatter = plan_.zero.stage >= 2;
  const ShardTarget shard{&state_.layout(), plan_.zero.shard, scatter ? state_.data<float>(Buffer::GradsShard) : nullptr};
  auto wire_buffer = [&](Buffer id, Range extent) {
    return static_cast<uint16_t*>(state_.add_buffer(id, wire, MemSpace::Device, extent).data);
  };
  if (wire != DType::F32) {  // the dense 16-bit reduction (config.cpp refuses it with top-k)
    // Staged gradients never launch a bucket (ZeroGradStaging reduces them, in the same type): the buckets only
    // report the wire bytes of the same reduce-scatters, and get no buffers.
    if (staging_) return make_half_wire_reduce_scatter(wire, nullptr, nullptr, shard);
    uint16_t* staging = wire_buffer(Buffer::GradWire, Range{0, state_.layout().size()});
    if (!scatter) return make_half_wire_allreduce(wire, staging);
    return make_half_wire_reduce_scatter(wire, staging, wire_buffer(Buffer::GradWireShard, plan_.zero.shard), shard);
  }
  if (choice.compress == CompressMethod::TopK) {  // on GPU builds by device kernels (compress/topk_device.hpp)
    if (scatter)
      throw Error("internal: top-k with a reduce-scatter (the compatibility table, src/core/features.cpp, refuses it)");
    return make_topk_allreduce(topk_compression(), buckets_->buckets().size());
  }
  return scatter ? make_bucket_reduce_scatter(shard) : make_dense_allreduce();
}

TopkCompression DataParallel::topk_compression() {
  const ConfigChoices choice = cfg_.choices();
  TopkCompression c;
  c.density = cfg_.compress.density;
  c.warmup_steps = cfg_.compress.warmup_steps;
  c.topk.error_feedback = cfg_.compress.error_feedback;
  c.topk.select = choice.topk_select == TopkSelect::Exact ? compress::Select::Exact : compress::Select::Sampled;
  c.local_clip = cfg_.compress.local_clip;
  c.topk.force = choice.topk_transport != TopkTransport::Auto;
  c.topk.forced = choice.topk_transport == TopkTransport::SharedIndex ? compress::Transport::Shared
                                                                      : compress::Transport::AllGather;
  c.topk.values = working_dtype(choice.topk_values);  // the same mapping of a precision to a DType
  // per rank; in checkpoints, resumed on the same layout only (topk_residuals.hpp)
  residuals_ = std::make_unique<TopkResiduals>(state_);
  c.residual = residuals_->data();
  return c;
}

void DataParallel::begin_step(long step, double loss_scale) {
  if (staging_) staging_->begin_step();
  else state_.zero_grads();
  if (gather_) gather_->invalidate();  // the parameters changed since the last gather (step, resume)
  if (buckets_) buckets_->begin_step(step, loss_scale);
}

float* DataParallel::some_grad() { return staging_ ? staging_->some_grad() : state_.grads(); }

std::function<void(int)> DataParallel::on_unit() {
  if (staging_) return [this](int u) { staging_->unit_done(u, comm_); };
  if (buckets_) return [this](int u) { buckets_->unit_done(u, comm_, state_.grads()); };
  return {};
}

void DataParallel::finish(const std::function<void()>& sum_tied_wte) {
  const bool wte_first = sum_tied_wte && plan_.zero.stage >= 2;  // before the reduce-scatter
  if (staging_) staging_->finish();  // one pipeline stage: no tied wte to sum
  else if (buckets_) buckets_->finish(comm_, state_.grads(), wte_first ? sum_tied_wte : std::function<void()>());
  else if (wte_first) sum_tied_wte();
  if (sum_tied_wte && !wte_first) sum_tied_wte();
}

void DataParallel::after_update() {
  allgather_params(state_, plan_.zero, comm_, shm_.get());  // ZeRO 1, 2: every updated shard to every rank
  if (gather_) gather_->invalidate();
}

GradBuckets::WireStats DataParallel::wire_stats() const {
  return buckets_ ? buckets_->wire_stats(comm_.size()) : GradBuckets::WireStats{};
}

bool DataParallel::in_shared_memory() const {
  const int stage = plan_.zero.stage;
  return shm_ && stage >= 1 && (stage <= 2 || staging_);
}

std::string DataParallel::describe() const {
  std::string line = plan_.zero.describe();
  if (in_shared_memory()) line += ", DP collectives through shared memory";
  else if (staging_) line += ", gradients staged per unit, reduce-scattered over " + comm_.backend();
  return line;
}

StateLedger DataParallel::predicted_ledger() const {
  const ZeroPlan& z = plan_.zero;
  return predicted_state_bytes(state_.layout().size(), z.dp_size, z.stage,
                               dtype_size(state_.buffer(Buffer::Params).dtype), gather_ ? gather_->buffer_elems() : 0,
                               staging_ ? staging_->elems() : 0);
}

}  // namespace gt
