// The GPT family (gpt_family.hpp): the seam's calls routed to what GPT already had.
#include "src/train/families/gpt_family.hpp"

#include "src/core/model_flops.hpp"
#include "src/model/gpt.hpp"
#include "src/train/resume_requirements.hpp"
#include "src/train/stage_chunks.hpp"

namespace gt {

std::string GptFamily::signature() const { return gpt_signature(m_); }

double GptFamily::train_flops_per_position() const { return gpt_flops_per_token(m_); }

std::vector<TensorSpec> GptFamily::tensor_specs(const StageLayout& chunk, int tp_rank, int tp_size) const {
  return model_tensor_specs(m_, chunk, tp_rank, tp_size);
}

std::unique_ptr<StageModel> GptFamily::make_stage(const StageBuild& b) const {
  return make_stage_model(b.precision, m_, b.seed, b.micro_batch_size, *b.chunks, *b.tp, *b.ops, *b.layout,
                          b.recompute);
}

std::unique_ptr<DataSource> GptFamily::make_source(const Config& cfg) const { return make_data_source(cfg); }

}  // namespace gt
