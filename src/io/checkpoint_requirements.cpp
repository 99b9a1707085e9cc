// What a run requires of a checkpoint's root attributes before resuming from it: present, of the right type,
// within range. A missing `step` used to end as "internal error: map::at" and a negative one resumed "at step -5".
#include <cstdio>

#include "src/core/error.hpp"
#include "src/io/checkpoint.hpp"

namespace gt {

namespace {
std::string attr_name(const std::string& path, const std::string& key) {
  return path + ": root attribute '" + key + "'";
}
}  // namespace

int64_t checkpoint_meta_int(const std::string& path, const CheckpointMeta& meta, const std::string& key, int64_t lo,
                            int64_t hi) {
  const auto i = meta.ints.find(key);
  if (i == meta.ints.end()) {
    if (const auto r = meta.reals.find(key); r != meta.reals.end()) {
      char v[32];
      std::snprintf(v, sizeof v, "%g", r->second);
      throw Error(attr_name(path, key) + " is a floating-point number (" + v + "), expected an integer");
    }
    if (meta.strings.count(key)) throw Error(attr_name(path, key) + " is a string, expected an integer");
    throw Error(attr_name(path, key) + " is missing");
  }
  if (i->second < lo || i->second > hi)
    throw Error(attr_name(path, key) + " is " + std::to_string(i->second) + ", outside [" + std::to_string(lo) +
                ", " + std::to_string(hi) + "]");
  return i->second;
}

CheckpointRequirements training_requirements(const std::vector<CheckpointRequirements::Dataset>& datasets,
                                             const std::string& model_signature) {
  constexpr int64_t kInt31 = 2147483647;
  CheckpointRequirements req;
  req.datasets = datasets;
  req.ints = {{"step", 0, kInt31, ""},
              {"samples_done", 0, int64_t(1) << 62, ""},
              {"skipped_steps", 0, kInt31, "skipped_steps"},
              {"global_batch", 1, int64_t(1) << 62, "global_batch"},
              {"grid.tp", 1, 1 << 20, "grid.tp"},
              {"grid.pp", 1, 1 << 20, "grid.pp"},
              {"grid.dp", 1, 1 << 20, "grid.dp"},
              {"loss_scale.clean_steps", 0, kInt31, "loss_scale"},
              {"loss_scale.hysteresis_left", 0, kInt31, "loss_scale"}};
  req.reals = {{"loss_scale", 0x1p-126, 0x1p127, "loss_scale"}};
  req.strings.push_back({"model", model_signature, "model"});
  return req;
}

CheckpointRequirements training_requirements(const std::vector<TensorShard>& shards, const std::string& model_signature) {
  std::vector<CheckpointRequirements::Dataset> datasets;
  for (const TensorShard& t : shards) datasets.push_back({t.name, t.global_shape});
  return training_requirements(datasets, model_signature);
}

namespace {
bool holds(const CheckpointMeta& meta, const std::string& key) {
  return meta.ints.count(key) || meta.reals.count(key) || meta.strings.count(key);
}
bool applies(const CheckpointMeta& meta, const std::string& key, const std::string& when) {
  return when.empty() || holds(meta, when);
}

double checkpoint_meta_real(const std::string& path, const CheckpointMeta& meta, const CheckpointRequirements::RealRange& r) {
  const auto i = meta.reals.find(r.key);
  if (i == meta.reals.end()) {
    if (meta.ints.count(r.key)) return double(checkpoint_meta_int(path, meta, r.key, int64_t(r.lo), int64_t(r.hi)));
    throw Error(attr_name(path, r.key) + (meta.strings.count(r.key) ? " is a string, expected a number" : " is missing"));
  }
  if (!(i->second >= r.lo && i->second <= r.hi)) {  // NaN fails too
    char v[96];
    std::snprintf(v, sizeof v, " is %g, outside [%g, %g]", i->second, r.lo, r.hi);
    throw Error(attr_name(path, r.key) + v);
  }
  return i->second;
}
}  // namespace

void check_checkpoint_meta(const std::string& path, const CheckpointMeta& meta, const CheckpointRequirements& req) {
  for (const CheckpointRequirements::IntRange& r : req.ints)
    if (applies(meta, r.key, r.when)) checkpoint_meta_int(path, meta, r.key, r.lo, r.hi);
  for (const CheckpointRequirements::RealRange& r : req.reals)
    if (applies(meta, r.key, r.when)) checkpoint_meta_real(path, meta, r);
  for (const CheckpointRequirements::SameString& s : req.strings) {
    const auto i = meta.strings.find(s.key);
    if (i == meta.strings.end()) throw Error(attr_name(path, s.key) + " is missing or not a string");
    if (i->second != s.want)
      throw Error(path + ": checkpoint of another " + s.what + " (" + i->second + "), this run is " + s.want);
  }
}

}  // namespace gt
