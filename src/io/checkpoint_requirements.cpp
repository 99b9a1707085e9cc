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

CheckpointRequirements training_requirements(const std::vector<TensorShard>& shards, const std::string& model_signature) {
  CheckpointRequirements req;
  for (const TensorShard& t : shards) req.datasets.push_back({t.name, t.global_shape});
  req.ints.push_back({"step", 0, 2147483647});
  req.ints.push_back({"samples_done", 0, int64_t(1) << 62});
  req.strings.push_back({"model", model_signature, "model"});
  return req;
}

void check_checkpoint_meta(const std::string& path, const CheckpointMeta& meta, const CheckpointRequirements& req) {
  for (const CheckpointRequirements::IntRange& r : req.ints) checkpoint_meta_int(path, meta, r.key, r.lo, r.hi);
  for (const CheckpointRequirements::SameString& s : req.strings) {
    const auto i = meta.strings.find(s.key);
    if (i == meta.strings.end()) throw Error(attr_name(path, s.key) + " is missing or not a string");
    if (i->second != s.want)
      throw Error(path + ": checkpoint of another " + s.what + " (" + i->second + "), this run is " + s.want);
  }
}

}  // namespace gt
