#include "src/train/resume_requirements.hpp"

#include <cstdio>
#include <sstream>

#include "src/core/deck.hpp"
#include "src/core/error.hpp"
#include "src/model/gpt.hpp"
#include "src/train/families/model_families.hpp"
#include "src/train/extensions/sparsity.hpp"

namespace gt {

// The model kind and shape: a gpt2 run refuses a llama checkpoint and the other way round, with this string in
// the message. GPT-2's is unchanged from before the Llama blocks, so older checkpoints still load; Llama's adds
// what shapes or changes its function (the key/value heads, the resolved SwiGLU width, RoPE's base).
std::string gpt_signature(const ModelConfig& m) {
  const std::string shape = " n_layer=" + std::to_string(m.n_layer) + " d_model=" + std::to_string(m.d_model) +
                            " n_head=" + std::to_string(m.n_head);
  const std::string tail = " seq_len=" + std::to_string(m.seq_len) + " vocab_size=" + std::to_string(m.vocab_size);
  if (!m.llama()) return "gpt2" + shape + tail;
  char theta[32];
  std::snprintf(theta, sizeof theta, "%.17g", m.rope_theta);
  const long ffn = m.ffn_hidden > 0 ? m.ffn_hidden : llama_default_ffn(m.d_model);
  return "llama" + shape + " n_kv_head=" + std::to_string(m.n_kv_head > 0 ? m.n_kv_head : m.n_head) +
         " ffn_hidden=" + std::to_string(ffn) + tail + " rope_theta=" + theta;
}

std::string model_signature(const ModelConfig& m) { return make_model_family(m)->signature(); }

std::optional<ModelConfig> parse_model_signature(const std::string& text) {
  ModelConfig m;
  char tail = 0;
  if (text.rfind("llama ", 0) == 0) {
    m.arch = "llama";
    if (std::sscanf(text.c_str(),
                    "llama n_layer=%d d_model=%d n_head=%d n_kv_head=%d ffn_hidden=%d seq_len=%d vocab_size=%d "
                    "rope_theta=%lf%c",
                    &m.n_layer, &m.d_model, &m.n_head, &m.n_kv_head, &m.ffn_hidden, &m.seq_len, &m.vocab_size,
                    &m.rope_theta, &tail) != 8 ||
        m.n_kv_head <= 0 || m.ffn_hidden <= 0 || !(m.rope_theta > 0))
      return std::nullopt;
  } else if (std::sscanf(text.c_str(), "gpt2 n_layer=%d d_model=%d n_head=%d seq_len=%d vocab_size=%d%c", &m.n_layer,
                         &m.d_model, &m.n_head, &m.seq_len, &m.vocab_size, &tail) != 5) {
    return std::nullopt;
  }
  if (m.n_layer <= 0 || m.d_model <= 0 || m.n_head <= 0 || m.seq_len <= 0 || m.vocab_size <= 0) return std::nullopt;
  if (gpt_signature(m) != text) return std::nullopt;  // exactly the form this build writes
  return m;
}

CheckpointRequirements resume_requirements(const Config& cfg) {
  const ModelConfig& m = cfg.model;
  std::vector<CheckpointRequirements::Dataset> datasets;
  const std::vector<TensorSpec> specs = make_model_family(m)->global_specs();
  for (Buffer group : {Buffer::Master, Buffer::AdamM, Buffer::AdamV})  // Master: the fp32 parameters of any run
    for (const TensorSpec& s : specs) datasets.push_back({disk_path(group, s.name), s.global_shape});
  if (cfg.choices().sparsity != SparsityPattern::None)
    for (const TensorSpec& s : specs)
      if (sparse_tensor(s)) datasets.push_back({disk_path(Buffer::SparseMask, s.name), s.global_shape});
  return training_requirements(datasets, model_signature(m));
}

namespace {
// The checkpoint's config attribute (Config::to_toml text) read back key by key; empty when it does not read.
std::optional<Config> config_of(const std::string& text) {
  Config cfg;
  std::istringstream in(text);
  DeckRules lenient;  // checkpoints written before to_toml gave each section once
  lenient.strict = false;
  try {
    for (const DeckEntry& e : read_deck(in, "checkpoint config", lenient)) cfg.set(e.key + "=" + e.value, e.where);
    cfg.validate();
  } catch (const Error&) {
    return std::nullopt;
  }
  return cfg;
}
}  // namespace

CheckpointRequirements requirements_of_checkpoint(const std::string& path, const CheckpointMeta& meta) {
  const auto text = meta.strings.find("config");
  std::optional<Config> cfg = text != meta.strings.end() ? config_of(text->second) : std::nullopt;
  if (!cfg) {
    const auto sig = meta.strings.find("model");
    const std::optional<ModelConfig> m = sig != meta.strings.end() ? parse_model_signature(sig->second) : std::nullopt;
    if (!m)
      throw Error(path + ": neither root attribute 'config' nor 'model' says which model the checkpoint holds " +
                  "(no run could resume from it)");
    cfg.emplace();
    cfg->model = *m;
  }
  return resume_requirements(*cfg);
}

}  // namespace gt
