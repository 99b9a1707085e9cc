#pragma once
// Sharded HDF5 checkpoints. Every tensor is stored in its *global* shape; each rank reads/writes only its
// own hyperslab, collectively through MPI-IO, so a restart on any other layout just selects other
// hyperslabs (resharding needs no conversion step).
#include <mpi.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace gt {

// One rank's part of one global tensor: the hyperslab [start, start + count) of global_shape, row-major
// contiguous in `data` (host memory).
struct TensorShard {
  std::string name;                    // dataset path inside the file, e.g. "params/h.3.attn.qkv.w"
  std::vector<int64_t> global_shape;
  std::vector<int64_t> start;
  std::vector<int64_t> count;
  float* data = nullptr;               // prod(count) floats, or flat_end - flat_begin with a flat range
  bool writer = true;                  // false: a replica that another rank writes (this rank selects none)
  // Only the elements [flat_begin, flat_end) of the hyperslab, in its row-major order (-1: all of it). A ZeRO
  // shard is a range of the flat buffers and may cut a tensor anywhere, even mid-row; the range is written as
  // the few boxes that tile it (src/io/shard_pieces.hpp).
  int64_t flat_begin = 0;
  int64_t flat_end = -1;
};

// Scalar metadata stored as attributes of the root group.
struct CheckpointMeta {
  std::map<std::string, int64_t> ints;        // step, grid.tp, grid.pp, grid.dp, format_version, ...
  std::map<std::string, double> reals;
  std::map<std::string, std::string> strings; // config (TOML text), model signature, ...
};

struct CheckpointOptions {
  std::string dir;     // checkpoint directory; files are <dir>/step_<8 digits>.h5 and <dir>/latest
  int keep = 3;        // keep the newest K valid checkpoints
  // Tuning knobs (defaults and their measured effect: docs/checkpoints.md); the benchmark varies them.
  bool verify_after_write = true;   // re-read the .tmp file and check every checksum before the rename
  // Tensors of at least this many bytes are transferred with collective MPI-IO (two-phase aggregation pays
  // off for large strided hyperslabs on parallel file systems); smaller ones with independent I/O, which has
  // no synchronisation per dataset. 0: all collective; INT64_MAX: all independent.
  int64_t collective_min_bytes = 16ll << 20;
  int64_t alignment = 1 << 20;      // H5Pset_alignment for objects >= 1 MiB (<= 1: no alignment)
  std::map<std::string, std::string> mpi_hints;  // MPI-IO hints, e.g. {"romio_cb_write", "enable"}
};

// Value of the root attribute format_version written by this code; load rejects other versions.
constexpr int64_t kCheckpointFormatVersion = 1;

// Collective over `comm`. Writes <dir>/step_N.h5.tmp, verifies, fsyncs, renames to step_N.h5, then rewrites
// `latest` atomically, then prunes to `keep`. Returns the final path. Throws gt::Error on failure (the
// previous checkpoints are untouched).
std::string save_checkpoint(MPI_Comm comm, const CheckpointOptions& opt, int64_t step,
                            const std::vector<TensorShard>& tensors, const CheckpointMeta& meta);

// Collective. Reads meta and every shard's hyperslab (data must be allocated), verifying each dataset's
// checksum and global shape. Throws gt::Error "<file>: <problem>" on any mismatch.
// Of `opt`, only collective_min_bytes matters here.
void load_checkpoint(MPI_Comm comm, const std::string& path, std::vector<TensorShard>& tensors,
                     CheckpointMeta& meta, const CheckpointOptions& opt = CheckpointOptions{});

// Reads only the metadata (collective).
CheckpointMeta read_checkpoint_meta(MPI_Comm comm, const std::string& path);

// What a run needs of a checkpoint before it resumes from it, beyond a file that verifies: the datasets of its
// model in their global shapes, integer root attributes within a range, strings equal to its own. Empty: any
// valid checkpoint.
struct CheckpointRequirements {
  struct Dataset {
    std::string name;
    std::vector<int64_t> global_shape;
  };
  // when: "" the attribute is required; its own key: checked only when present; another key: required when
  // the checkpoint holds that one (the loss scaler's counters go with its scale).
  struct IntRange {
    std::string key;
    int64_t lo, hi;
    std::string when;
  };
  struct RealRange {  // a finite floating-point attribute in [lo, hi]
    std::string key;
    double lo, hi;
    std::string when;
  };
  struct SameString {
    std::string key, want, what;  // what: "model" -> "checkpoint of another model (...), this run is ..."
  };
  std::vector<Dataset> datasets;
  std::vector<IntRange> ints;
  std::vector<RealRange> reals;
  std::vector<SameString> strings;
};

// Rank-local: throws gt::Error "<file>: root attribute 'step' ..." when meta misses a required attribute, holds
// it with another type, or out of its range, or when a required string differs.
void check_checkpoint_meta(const std::string& path, const CheckpointMeta& meta, const CheckpointRequirements& req);
// A training run's requirements: every dataset in its global shape, the string attribute "model" equal to
// model_signature, and every root attribute a resume reads within its range: `step` in [0, 2^31), `samples_done`
// in [0, 2^62]; when present skipped_steps in [0, 2^31), global_batch in [1, 2^62], grid.tp/pp/dp in [1, 2^20],
// loss_scale finite in (0, 2^128] and then its counters loss_scale.clean_steps and loss_scale.hysteresis_left
// in [0, 2^31) (a resume read them with map::at: a missing one ended as "internal error").
CheckpointRequirements training_requirements(const std::vector<CheckpointRequirements::Dataset>& datasets,
                                             const std::string& model_signature);
// The same for the datasets of these shards.
CheckpointRequirements training_requirements(const std::vector<TensorShard>& shards, const std::string& model_signature);
// The integer root attribute `key` of meta, checked as check_checkpoint_meta does.
int64_t checkpoint_meta_int(const std::string& path, const CheckpointMeta& meta, const std::string& key, int64_t lo,
                            int64_t hi);

// The checkpoint a resume=auto run continues from (collective). Candidates: the file named by <dir>/latest
// (the commit record) when it names a checkpoint file of dir, then every step_*.h5 most recently written
// first. Each is verified in full (every checksum, no non-finite value) and against req; every rejected
// candidate, and a `latest` that is missing, empty, garbage or names a missing file, gets one warning line on
// rank 0 naming the problem and the fallback. Empty when dir holds no checkpoint at all. When it holds some
// but none is valid, throws gt::Error naming them (a fresh start would overwrite and prune them).
std::optional<std::string> find_latest_checkpoint(MPI_Comm comm, const std::string& dir,
                                                  const CheckpointRequirements& req = {});

// Collective. Opens path, checks gridtrain_kind/format_version, req, and the checksum of every dataset in it
// (and that it holds no NaN/inf); returns the meta. Throws gt::Error "<file>: <problem>" (on every rank).
CheckpointMeta verify_checkpoint(MPI_Comm comm, const std::string& path, const CheckpointRequirements& req = {});

}  // namespace gt
