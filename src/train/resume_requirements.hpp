#pragma once
// What a run requires of a checkpoint before it resumes from it: the one validation that resume (resume=auto,
// an explicit checkpoint.resume=PATH, the rollback of train.nonfinite) and `gridtrain inspect` apply, with
// verify_checkpoint (src/io/checkpoint.hpp). `inspect` passed 10 of 40 damaged checkpoints that resume refused
// (a missing dataset, bad root attributes, NaN weights, a wrong shape): it checked only what the file listed.
#include <optional>
#include <string>

#include "src/core/config.hpp"
#include "src/io/checkpoint.hpp"

namespace gt {

// The root attribute `model`: the model family's signature (ModelFamily::signature), e.g. "gpt2 n_layer=2
// d_model=128 n_head=4 seq_len=64 vocab_size=256", "llama n_layer=2 d_model=128 n_head=4 n_kv_head=2
// ffn_hidden=352 seq_len=64 vocab_size=256 rope_theta=10000" or "resnet resnet20 image=28x28x1 classes=10".
std::string model_signature(const ModelConfig& m);
// GPT's (gpt2 or llama, as above; src/train/families/gpt_family.hpp).
std::string gpt_signature(const ModelConfig& m);
// The GPT model of a signature; empty when the text is not one (a resnet run's checkpoint carries its config).
std::optional<ModelConfig> parse_model_signature(const std::string& text);

// A run of cfg resumes only from a checkpoint holding params/, adam_m/ and adam_v/ of every tensor of its model
// in its global shape (and sparse_mask/ of the masked tensors under sparsity.pattern = 2:4), of its model
// signature, with every root attribute a resume reads in range (training_requirements).
CheckpointRequirements resume_requirements(const Config& cfg);

// For `inspect`: the requirements of a run restarted with the checkpoint's own configuration (its `config`
// attribute; when that does not read back, the defaults with the model of its `model` attribute). Throws
// gt::Error "<file>: ..." when neither names a model.
CheckpointRequirements requirements_of_checkpoint(const std::string& path, const CheckpointMeta& meta);

}  // namespace gt
