#include "src/train/checkpointer.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <vector>

#include "src/comm/watchdog.hpp"
#include "src/core/error.hpp"
#include "src/io/checkpoint_verify.hpp"
#include "src/train/kv_replicas.hpp"
#include "src/train/resume_requirements.hpp"

namespace gt {

namespace {
constexpr int64_t kStateVersion = 1;
}  // namespace

std::vector<int64_t> checkpoint_count(const TensorSpec& s) {
  std::vector<int64_t> c = s.local_shape();
  if (checkpoint_range(s).size() < s.size) c[size_t(s.sel_dim)] = s.sel_len;
  return c;
}

Checkpointer::Checkpointer(const Config& cfg, Grid& grid, const std::string& config_text, TrainState& state,
                           std::string data_description, int64_t global_batch, const ZeroPlan& zero,
                           MirrorMode mirror, std::vector<TrainExtension*> extensions)
    : cfg_(cfg),
      grid_(grid),
      config_text_(config_text),
      state_(state),
      zero_(zero),
      mirror_(mirror),
      extensions_(std::move(extensions)),
      data_description_(std::move(data_description)),
      global_batch_(global_batch),
      dir_(cfg.checkpoint_dir()) {}

// Host mirrors (CPU builds: the buffers themselves) of the state buffers a checkpoint holds: the fp32 masters,
// the moments and the extensions' buffers, each of the extent its buffer holds (the shard, under ZeRO).
// Keyed by the buffer: the master is master_id() (the working copy itself in an fp32 run without sparsity).
struct Checkpointer::HostState {
  std::map<Buffer, HostMirror<float>> mirrors;
  HostState(TrainState& s, MirrorMode mode, const std::vector<TrainExtension*>& extensions) {
    std::vector<Buffer> ids = {s.master_id(), Buffer::AdamM, Buffer::AdamV};
    for (const TrainExtension* e : extensions)
      for (Buffer b : e->buffers()) ids.push_back(b);
    for (Buffer id : ids) mirrors.try_emplace(id, s.data<float>(id), s.buffer(id).extent.size(), mode);
  }
  float* operator[](Buffer id) { return mirrors.at(id).data(); }
  void pull() {
    for (auto& [name, m] : mirrors) m.pull();
  }
  void push() {
    for (auto& [name, m] : mirrors) m.push();
  }
};

std::vector<TensorShard> Checkpointer::shards(HostState& h) {
  std::vector<TensorShard> out;
  // (the group on disk, the buffer saved in it): the master's group holds master_id()
  const std::pair<Buffer, Buffer> groups[] = {
      {Buffer::Master, state_.master_id()}, {Buffer::AdamM, Buffer::AdamM}, {Buffer::AdamV, Buffer::AdamV}};
  // Under ZeRO every DP rank writes (and reads) the elements of its shard, also of the buffers it holds in
  // full: the writers tile each tensor with no gather. Without, DP rank 0 writes everything (every rank reads it).
  const Range mine = zero_.sharded() ? zero_.shard : Range{0, state_.layout().size()};
  for (const auto& [group, buffer] : groups) {
    const Range extent = state_.buffer(buffer).extent;
    float* base = h[buffer];  // host memory: holds `extent`
    for (const TensorSpec& s : state_.layout().tensors()) {
      Range r = intersect(s, mine);  // inside `extent`: a sharded buffer holds the shard
      r.end = std::min(r.end, checkpoint_range(s).end);  // a replicated key/value head: the last replica's
      if (r.begin >= r.end) r = Range{s.offset, s.offset};  // no element of s in this shard
      TensorShard t;
      t.name = disk_path(group, s.name);
      t.global_shape = s.global_shape;
      t.start = s.local_start();
      t.count = checkpoint_count(s);
      t.data = r.size() > 0 ? base + (r.begin - extent.begin) : base;
      if (zero_.sharded()) {  // the part of the tensor in this shard, maybe cut mid-row
        t.flat_begin = static_cast<int64_t>(r.begin - s.offset);
        t.flat_end = static_cast<int64_t>(r.end - s.offset);
      }
      t.writer = (zero_.sharded() || grid_.dp_rank() == 0) && owner(s, grid_);  // one writer per global element
      out.push_back(std::move(t));
    }
  }
  return out;
}

ExtensionIo Checkpointer::extension_io(HostState& h) {
  return ExtensionIo{grid_, state_, [&h](Buffer b) { return h[b]; }};
}

CheckpointMeta Checkpointer::meta(const TrainProgress& p) const {
  const TrainConfig& t = cfg_.train;
  CheckpointMeta meta;
  meta.ints["state_version"] = kStateVersion;
  meta.ints["step"] = p.step;
  meta.ints["samples_done"] = p.samples_done;
  meta.ints["global_batch"] = global_batch_;
  meta.ints["seed"] = t.seed;
  meta.ints["grid.tp"] = grid_.shape().tp;
  meta.ints["grid.pp"] = grid_.shape().pp;
  meta.ints["grid.dp"] = grid_.shape().dp;
  // the rate of the last completed step
  meta.reals["lr"] = p.lr;
  meta.reals["loss"] = p.loss;
  meta.ints["skipped_steps"] = p.skipped;
  meta.strings["precision"] = cfg_.train.precision;
  meta.strings["model"] = model_signature(cfg_.model);
  meta.strings["config"] = config_text_;
  meta.strings["data"] = data_description_;
  // The run has no sequential RNG: initialisation and data order are pure functions of (seed, index), so
  // (seed, step, samples_done) is the whole random state.
  meta.strings["rng"] = "counter-based: seed + samples_done";
  return meta;
}

void Checkpointer::save(const TrainProgress& p, const std::string& reason) {
  Kokkos::fence();
  CheckpointOptions opt;
  opt.dir = dir_;
  opt.keep = cfg_.checkpoint.keep;
  const double t0 = MPI_Wtime();
  HostState h(state_, mirror_, extensions_);
  h.pull();
  std::vector<TensorShard> s = shards(h);
  CheckpointMeta m = meta(p);
  ExtensionIo io = extension_io(h);
  for (TrainExtension* e : extensions_) {  // in list order on every rank: datasets() may be collective
    for (TensorShard& t : e->datasets(io)) s.push_back(std::move(t));
    e->save_meta(m);
  }
  // HDF5's collective I/O makes MPI calls of its own, which the communicator's watchdog brackets do not see: a
  // rank hung in them (a failing disk that leaves the ranks on different paths of the library) is reported and
  // the job aborted after train.watchdog_s, like a hang in any collective.
  watchdog::enter("checkpoint write (HDF5 collective I/O)", grid_.world().watch_group());
  std::string path;
  try {
    path = save_checkpoint(grid_.world_mpi(), opt, p.step, s, m);
  } catch (...) {
    watchdog::leave();
    throw;
  }
  watchdog::leave();
  last_saved_step_ = p.step;
  if (grid_.world_rank() == 0)
    std::printf("gridtrain: checkpoint %s (%s, %.2f s)\n", path.c_str(), reason.c_str(), MPI_Wtime() - t0);
}

CheckpointMeta Checkpointer::load(const std::string& path, HostState& h, std::vector<TensorShard>& s,
                                  const CheckpointRequirements& req, TrainProgress* p) {
  CheckpointMeta meta = read_checkpoint_meta(grid_.world_mpi(), path);
  check_checkpoint_meta(path, meta, req);  // the same text on every rank: they read the same file
  ExtensionIo io = extension_io(h);
  std::vector<TensorShard> all = s;  // the state's datasets, and those of each extension that restores from here
  for (TrainExtension* e : extensions_)
    if (e->restores_from(io, meta))
      for (TensorShard& t : e->datasets(io)) all.push_back(std::move(t));
  load_checkpoint(grid_.world_mpi(), path, all, meta);
  h.push();
  // replicated key/value heads: the last replica read them (kv_replicas.hpp)
  copy_kv_from_last_replica(state_, {state_.master_id(), Buffer::AdamM, Buffer::AdamV}, grid_.tp());
  for (TrainExtension* e : extensions_) e->after_load(io);
  // Each rank read its shard; the parameters it computes with are the whole layout (ZeRO 1 and 2). A separate
  // fp32 master (sparsity, lower precisions) is refreshed into the working copy by its extension's on_resume.
  if (!state_.has_buffer(Buffer::Master)) allgather_params(state_, zero_, grid_.dp());
  p->step = static_cast<int>(meta.ints.at("step"));  // present and in range: checked above
  p->samples_done = meta.ints.at("samples_done");
  if (meta.reals.count("loss")) p->loss = meta.reals["loss"];
  if (meta.reals.count("lr")) p->lr = meta.reals["lr"];
  if (meta.ints.count("skipped_steps")) p->skipped = static_cast<int>(meta.ints["skipped_steps"]);
  for (TrainExtension* e : extensions_) e->load_meta(meta);  // the loss scaler's scale and counters, ...
  last_saved_step_ = p->step;
  return meta;
}

int Checkpointer::rollback(TrainProgress* p) {
  HostState h(state_, mirror_, extensions_);
  std::vector<TensorShard> s = shards(h);
  const CheckpointRequirements req = resume_requirements(cfg_);
  auto found = find_latest_checkpoint(grid_.world_mpi(), dir_, req);
  if (!found)
    throw Error("train.nonfinite = rollback: no checkpoint in " + dir_ +
                " to roll back to (set checkpoint.every, or train.nonfinite = skip)");
  const int64_t samples_done = p->samples_done;
  load(*found, h, s, req, p);
  p->samples_done = samples_done;
  if (grid_.world_rank() == 0)
    std::printf("gridtrain: rolled back to %s (step %d); the data go on at sample %lld\n", found->c_str(), p->step,
                (long long)samples_done);
  return p->step;
}

bool Checkpointer::resume(TrainProgress* p) {
  std::string path = cfg_.checkpoint.resume;
  if (path == "none") return false;
  HostState h(state_, mirror_, extensions_);
  std::vector<TensorShard> s = shards(h);
  // Any damage (a missing or reshaped tensor, bad counters, NaN) makes resume=auto fall back to an older one.
  // The same requirements and verification as `gridtrain inspect` (resume_requirements.hpp).
  const CheckpointRequirements req = resume_requirements(cfg_);
  if (path == "auto") {
    auto found = find_latest_checkpoint(grid_.world_mpi(), dir_, req);
    if (!found) {
      if (grid_.world_rank() == 0) std::printf("gridtrain: no checkpoint in %s, starting fresh\n", dir_.c_str());
      return false;
    }
    path = *found;
  } else {
    // An explicit file is not skipped when damaged, but HDF5 crashing on it is one error line, not exit 139;
    // it is verified as a resume=auto candidate is (every dataset, not only those this layout reads).
    io::check_hdf5_survives(grid_.world_mpi(), path);
    verify_checkpoint(grid_.world_mpi(), path, req);
  }
  CheckpointMeta meta = load(path, h, s, req, p);
  resumed_from_ = path;
  const int64_t saved_batch = meta.ints.count("global_batch") ? meta.ints["global_batch"] : global_batch_;
  if (saved_batch != global_batch_ && grid_.world_rank() == 0)
    std::fprintf(stderr,
                 "gridtrain: warning: global batch is %lld sequences (micro_batch_size x micro_batches x dp), the "
                 "checkpoint was written with %lld; the data continue at sample %lld but the run is no longer the "
                 "same as the uninterrupted one (set train.micro_batches to keep the global batch)\n",
                 (long long)global_batch_, (long long)saved_batch, (long long)p->samples_done);
  if (grid_.world_rank() == 0)
    std::printf("gridtrain: resumed from %s at step %d (written on tp=%lld pp=%lld dp=%lld)\n", path.c_str(), p->step,
                (long long)meta.ints["grid.tp"], (long long)meta.ints["grid.pp"], (long long)meta.ints["grid.dp"]);
  return true;
}

}  // namespace gt
