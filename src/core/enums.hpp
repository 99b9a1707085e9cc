#pragma once
// Every config key that takes one of a few names, as an enum with its table of names: the one list of the
// names (the schema's choices in src/core/config_schema.cpp come from here), shared by the trainer and the planner
// (src/plan/layout.hpp uses Precision and Recompute from here). Code outside src/core reads these through
// Config::choices() and never compares a config value as a string.
//
// Adding a choice: add the enumerator and its row below; the schema, `gridtrain keys --doc`, docs/config.md's
// table (regenerated, tests/cli: cli_config_doc) and the error message for a wrong name follow.
#include <string>
#include <vector>

namespace gt {

// train.precision and compress.values: the element type of weights and activations, or of a wire. FP8 is the
// planner's alone (Hopper GEMMs in fp8 through Transformer Engine, the rest bf16): no trainer key offers it
// (config_schema.cpp's schema leaves it out of their choices).
enum class Precision { FP32, BF16, FP16, FP8 };
// train.recompute (docs/zero.md): what backward recomputes instead of keeping.
enum class Recompute { None, Selective, Full };
// train.loss_scale (docs/precision.md): auto = dynamic for fp16, none otherwise.
enum class LossScaleMode { Auto, Dynamic, None };
// train.nonfinite (docs/reliability.md): what a bad step does.
enum class NonfinitePolicy { Stop, Skip, Rollback };
// parallel.schedule: the pipeline schedule.
enum class PipelineSchedule { OneFOneB, GPipe, Interleaved };
// parallel.allreduce: the DP all-reduce algorithm on MPI groups.
enum class AllreduceChoice { Auto, Mpi, Ring, Shm };
// parallel.comm: the library of the device groups.
enum class CommChoice { Auto, Mpi, Nccl };
// parallel.grad_reduce_dtype: the wire type of the dense DP gradient all-reduce.
enum class GradWire { FP32, BF16 };
// parallel.layout: tp/pp/dp from the deck, or chosen by the planner at start.
enum class LayoutMode { Manual, Auto };
// parallel.rebalance: re-partition the pipeline once from measured block times.
enum class RebalanceMode { Off, Auto };
// parallel.adapt: adaptive parallelism at run time (issue 25, docs/adaptive.md).
enum class AdaptMode { Off, Monitor, Rebalance, Full };
// data.source.
enum class DataSourceKind { Synthetic, Hdf5 };
// kernels.gemm: the host GEMM library.
enum class GemmChoice { Auto, OneDNN, OpenBLAS };
// compress.method (docs/compression.md).
enum class CompressMethod { None, TopK, BF16, FP16 };
// compress.select: how top-k finds its threshold.
enum class TopkSelect { Sampled, Exact };
// compress.transport: how top-k's entries travel.
enum class TopkTransport { Auto, AllGather, SharedIndex };
// sparsity.pattern (docs/sparsity.md).
enum class SparsityPattern { None, TwoFour };
// sparsity.recipe.
enum class SparsityRecipe { SRSTE, ASP };
// model.arch (docs/model.md): the block's family.
enum class ModelArch { GPT2, Llama };
// model.attention (docs/model.md): the causal attention kernel.
enum class AttentionKernel { Fused, Materialized };
// model.conv_algorithm (docs/vision.md): how a ResNet's fp32 3x3 stride-1 convolutions are computed.
enum class ConvAlgorithm { Direct, Winograd };
// model.kind (docs/vision.md): the model family, each implementing the model seam (src/model/model_family.hpp).
enum class ModelKind { GPT, ResNet };
// train.optimizer: AdamW (the transformer recipe) or SGD with momentum (the ResNet recipe).
enum class OptimizerKind { AdamW, SGD, LARS };
// train.lr_scaling (src/train/optim/lr_scaling.hpp): the linear scaling rule with gradual warmup (Goyal et al. 2017).
enum class LrScaling { None, Linear };
enum class LrDecay { Cosine, Step };  // after warm-up: cosine to min_lr, or x factor at each milestone
// parallel.zero (docs/zero.md): an integer key 0-3; the stages by name for code that branches on them.
enum class ZeroStage { None = 0, OptimizerState = 1, Gradients = 2, Parameters = 3 };

template <class E>
struct EnumName {
  const char* name;
  E value;
};

// The names of each enum, in the order the docs list them (the first is not necessarily the default).
template <class E>
struct EnumNames;
#define GT_ENUM_NAMES(E, ...)                            \
  template <>                                            \
  struct EnumNames<E> {                                  \
    static constexpr EnumName<E> rows[] = {__VA_ARGS__}; \
  };
GT_ENUM_NAMES(Precision, {"fp32", Precision::FP32}, {"bf16", Precision::BF16}, {"fp16", Precision::FP16},
              {"fp8", Precision::FP8})
GT_ENUM_NAMES(Recompute, {"none", Recompute::None}, {"selective", Recompute::Selective}, {"full", Recompute::Full})
GT_ENUM_NAMES(LossScaleMode, {"auto", LossScaleMode::Auto}, {"dynamic", LossScaleMode::Dynamic},
              {"none", LossScaleMode::None})
GT_ENUM_NAMES(NonfinitePolicy, {"stop", NonfinitePolicy::Stop}, {"skip", NonfinitePolicy::Skip},
              {"rollback", NonfinitePolicy::Rollback})
GT_ENUM_NAMES(PipelineSchedule, {"1f1b", PipelineSchedule::OneFOneB}, {"gpipe", PipelineSchedule::GPipe},
              {"interleaved", PipelineSchedule::Interleaved})
GT_ENUM_NAMES(AllreduceChoice, {"auto", AllreduceChoice::Auto}, {"mpi", AllreduceChoice::Mpi},
              {"ring", AllreduceChoice::Ring}, {"shm", AllreduceChoice::Shm})
GT_ENUM_NAMES(CommChoice, {"auto", CommChoice::Auto}, {"mpi", CommChoice::Mpi}, {"nccl", CommChoice::Nccl})
GT_ENUM_NAMES(GradWire, {"fp32", GradWire::FP32}, {"bf16", GradWire::BF16})
GT_ENUM_NAMES(LayoutMode, {"manual", LayoutMode::Manual}, {"auto", LayoutMode::Auto})
GT_ENUM_NAMES(RebalanceMode, {"off", RebalanceMode::Off}, {"auto", RebalanceMode::Auto})
GT_ENUM_NAMES(AdaptMode, {"off", AdaptMode::Off}, {"monitor", AdaptMode::Monitor}, {"rebalance", AdaptMode::Rebalance},
              {"full", AdaptMode::Full})
GT_ENUM_NAMES(DataSourceKind, {"synthetic", DataSourceKind::Synthetic}, {"hdf5", DataSourceKind::Hdf5})
GT_ENUM_NAMES(GemmChoice, {"auto", GemmChoice::Auto}, {"onednn", GemmChoice::OneDNN},
              {"openblas", GemmChoice::OpenBLAS})
GT_ENUM_NAMES(CompressMethod, {"none", CompressMethod::None}, {"topk", CompressMethod::TopK},
              {"bf16", CompressMethod::BF16}, {"fp16", CompressMethod::FP16})
GT_ENUM_NAMES(TopkSelect, {"sampled", TopkSelect::Sampled}, {"exact", TopkSelect::Exact})
GT_ENUM_NAMES(TopkTransport, {"auto", TopkTransport::Auto}, {"allgather", TopkTransport::AllGather},
              {"shared_index", TopkTransport::SharedIndex})
GT_ENUM_NAMES(SparsityPattern, {"none", SparsityPattern::None}, {"2:4", SparsityPattern::TwoFour})
GT_ENUM_NAMES(SparsityRecipe, {"srste", SparsityRecipe::SRSTE}, {"asp", SparsityRecipe::ASP})
GT_ENUM_NAMES(ModelArch, {"gpt2", ModelArch::GPT2}, {"llama", ModelArch::Llama})
GT_ENUM_NAMES(ModelKind, {"gpt", ModelKind::GPT}, {"resnet", ModelKind::ResNet})
GT_ENUM_NAMES(OptimizerKind, {"adamw", OptimizerKind::AdamW}, {"sgd", OptimizerKind::SGD}, {"lars", OptimizerKind::LARS})
GT_ENUM_NAMES(LrScaling, {"none", LrScaling::None}, {"linear", LrScaling::Linear})
GT_ENUM_NAMES(LrDecay, {"cosine", LrDecay::Cosine}, {"step", LrDecay::Step})
GT_ENUM_NAMES(AttentionKernel, {"fused", AttentionKernel::Fused}, {"materialized", AttentionKernel::Materialized})
GT_ENUM_NAMES(ConvAlgorithm, {"direct", ConvAlgorithm::Direct}, {"winograd", ConvAlgorithm::Winograd})
#undef GT_ENUM_NAMES

// The name of a value ("?" for a value outside the table, which a cast could make).
template <class E>
const char* enum_name(E v) {
  for (const EnumName<E>& r : EnumNames<E>::rows)
    if (r.value == v) return r.name;
  return "?";
}

// The value of a name; false when the name is not in the table.
template <class E>
bool parse_enum(const std::string& name, E& out) {
  for (const EnumName<E>& r : EnumNames<E>::rows)
    if (name == r.name) {
      out = r.value;
      return true;
    }
  return false;
}

template <class E>
std::vector<std::string> enum_names() {
  std::vector<std::string> out;
  for (const EnumName<E>& r : EnumNames<E>::rows) out.push_back(r.name);
  return out;
}

}  // namespace gt
