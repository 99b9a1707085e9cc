// The typed view of the named keys (ConfigChoices, src/core/enums.hpp): each name looked up in its enum's table.
#include <algorithm>
#include <string>
#include <vector>

#include "src/core/config.hpp"
#include "src/core/config_schema.hpp"
#include "src/core/error.hpp"

namespace gt {
using namespace config_schema;

namespace {
template <class E>
E typed(const char* key, const std::string& v) {
  E out{};
  const std::vector<std::string> allowed = names<E>();
  if (std::find(allowed.begin(), allowed.end(), v) != allowed.end() && parse_enum(v, out)) return out;
  std::string list;
  for (const std::string& n : allowed) list += (list.empty() ? "\"" : ", \"") + n + "\"";
  throw Error(std::string("config key '") + key + "' must be one of " + list + ", got \"" + v + "\"");
}
}  // namespace

ModelKind ModelConfig::model_kind() const { return typed<ModelKind>("model.kind", kind); }
ModelArch ModelConfig::arch_kind() const { return typed<ModelArch>("model.arch", arch); }
AttentionKernel ModelConfig::attention_kernel() const { return typed<AttentionKernel>("model.attention", attention); }
ConvAlgorithm ModelConfig::conv_algorithm_kind() const {
  return typed<ConvAlgorithm>("model.conv_algorithm", conv_algorithm);
}

ConfigChoices Config::choices() const {
  ConfigChoices t;
  t.precision = typed<Precision>("train.precision", train.precision);
  t.recompute = typed<Recompute>("train.recompute", train.recompute);
  t.loss_scale = typed<LossScaleMode>("train.loss_scale", train.loss_scale);
  t.nonfinite = typed<NonfinitePolicy>("train.nonfinite", train.nonfinite);
  t.schedule = typed<PipelineSchedule>("parallel.schedule", parallel.schedule);
  t.allreduce = typed<AllreduceChoice>("parallel.allreduce", parallel.allreduce);
  t.comm = typed<CommChoice>("parallel.comm", parallel.comm);
  t.grad_reduce_dtype = typed<GradWire>("parallel.grad_reduce_dtype", parallel.grad_reduce_dtype);
  t.layout = typed<LayoutMode>("parallel.layout", parallel.layout);
  t.rebalance = typed<RebalanceMode>("parallel.rebalance", parallel.rebalance);
  t.adapt = typed<AdaptMode>("parallel.adapt", parallel.adapt);
  t.data_source = typed<DataSourceKind>("data.source", data.source);
  t.gemm = typed<GemmChoice>("kernels.gemm", kernels.gemm);
  t.compress = typed<CompressMethod>("compress.method", compress.method);
  t.topk_select = typed<TopkSelect>("compress.select", compress.select);
  t.topk_transport = typed<TopkTransport>("compress.transport", compress.transport);
  t.topk_values = typed<Precision>("compress.values", compress.values);
  t.sparsity = typed<SparsityPattern>("sparsity.pattern", sparsity.pattern);
  t.sparsity_recipe = typed<SparsityRecipe>("sparsity.recipe", sparsity.recipe);
  if (parallel.zero < 0 || parallel.zero > 3)
    throw Error("config key 'parallel.zero' must be 0, 1, 2 or 3, got " + std::to_string(parallel.zero));
  t.zero = static_cast<ZeroStage>(parallel.zero);
  t.model = model.model_kind();
  t.optimizer = typed<OptimizerKind>("train.optimizer", train.optimizer);
  t.lr_scaling = typed<LrScaling>("train.lr_scaling", train.lr_scaling);
  t.lr_decay = typed<LrDecay>("train.lr_decay", train.lr_decay);
  return t;
}

bool Config::dynamic_loss_scale() const {
  const ConfigChoices t = choices();
  return t.loss_scale == LossScaleMode::Dynamic || (t.loss_scale == LossScaleMode::Auto && t.precision == Precision::FP16);
}

}  // namespace gt
