#include "src/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <sys/stat.h>

#include "src/core/error.hpp"
#include "src/core/features.hpp"
#include "src/core/stop_signal.hpp"
#include "src/core/test_hooks.hpp"
#include "src/train/dp/dp_shares.hpp"
#include "src/train/host_mirror.hpp"
#include "src/train/families/model_families.hpp"
#include "src/train/optim/lr_schedule.hpp"
#include "src/data/data_source.hpp"
#include "src/train/report/metrics.hpp"
#include "src/train/adapt/adapt_agree.hpp"
#include "src/train/adapt/rebalancer.hpp"
#include "src/train/stage_chunks.hpp"
#include "src/train/startup_stop.hpp"

namespace gt {

namespace {

double blocked(Comm* c) { return c ? c->stats().blocked_seconds : 0.0; }

// Test hook test_hooks::fail_hook() (src/core/test_hooks.hpp): world rank r fails alone as step s
// begins, while the other ranks go on into that step's collectives.
void test_fail_hook(int world_rank, int step) {
  static const test_hooks::FailHook h = test_hooks::fail_hook();
  if (h.fails_in_step(world_rank, step))
    throw Error("test hook: rank " + std::to_string(h.rank) + " failed alone in step " + std::to_string(step));
}

// Test hook test_hooks::gradient_hook() (src/core/test_hooks.hpp): an inf, a NaN or a given value in one gradient
// element of one rank as a step begins; backward accumulates onto it, the reductions carry it.
void test_overflow_hook(int world_rank, int step, float* grads) {
  static const test_hooks::GradientHook h = test_hooks::gradient_hook();
  static bool fired = false;  // once: a rollback repeats the step number
  if (h.armed && h.rank == world_rank && h.step == step && !fired) {
    fired = true;
    const float v = h.has_value ? h.finite_value : h.nan ? std::nanf("") : HUGE_VALF;
    Kokkos::deep_copy(Kokkos::subview(DeviceView<float>(grads, 1), 0), v);
  }
}

bool file_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

Trainer::Trainer(const Config& cfg, Grid& grid, const std::string& config_text)
    : cfg_(cfg), grid_(grid), config_text_(config_text) {
  const ModelConfig& m = cfg_.model;
  const GridShape& g = grid_.shape();
  const ConfigChoices choice = cfg_.choices();
  const std::vector<int> partition = stage_partition(cfg_, g.pp);
  partition_ = partition;
  // The stage's model chunks (one but under the interleaved schedule: stage_chunks.hpp); stage_ spans them.
  const std::vector<StageLayout> chunks = stage_chunks(cfg_, g.pp, grid_.pp_rank(), partition);
  stage_ = StageLayout{grid_.pp_rank(), g.pp, chunks.front().block_begin, chunks.back().block_end};
  std::vector<PipeOp> ops = pipeline_ops(choice.schedule, dp::replica_micro_batches(cfg_, grid_.dp_rank()));
  TensorParallel tp{grid_.tp_rank(), g.tp, g.tp > 1 ? &grid_.tp() : nullptr,
                    cfg_.parallel.sequence_parallel && g.tp > 1};
  const uint64_t seed = static_cast<uint64_t>(cfg_.train.seed);
  FeatureSet(cfg_).check();       // the pairs of features that cannot run together (src/core/features.hpp)
  family_ = make_model_family(m);  // the model seam: tensors, stage model, data, accounting
  family_->check(cfg_, g);

  // The DP plan first: the state is allocated as shards directly (no full buffer exists even at start-up).
  TensorLayout layout(family_->stage_specs(chunks, tp.rank, tp.size), g.dp);
  DataParallel::Plan dp_plan = DataParallel::plan(cfg_, g.pp, grid_.dp_rank(), g.dp, layout);
  state_ = std::make_unique<TrainState>(std::move(layout), choice.precision, seed, dp_plan.extents);
  auto grads = [this] { return state_->has_buffer(Buffer::Grads) ? state_->grads() : nullptr; };
  model_ = family_->make_stage(StageBuild{choice.precision, seed, cfg_.train.micro_batch_size, &chunks, &tp, &ops,
                                          &state_->layout(), choice.recompute, &grid_.dp()});
  model_->bind(state_->params(), grads());
  std::unique_ptr<DataSource> source = make_schedule(choice);  // first: a run in epochs learns its steps here
  rebalancer_ = std::make_unique<Rebalancer>(cfg_, grid_, *model_, partition);
  make_adaptation(choice.adapt, partition);
  loader_ = std::make_unique<BatchLoader>(cfg_, std::move(source), grid_.dp_rank(), g.dp,
                                          stage_.first() || stage_.last());
  pipeline_ = std::make_unique<PipelineRunner>(cfg_, grid_, *model_, *loader_, std::move(ops),
                                               family_->positions_per_sample());

  dp_ = std::make_unique<DataParallel>(cfg_, grid_, *state_, *model_, std::move(dp_plan), tied_embed() != nullptr);
  const ZeroPlan& zero = dp_->zero();
  make_extensions(choice, zero);
  optimizer_ = std::make_unique<Optimizer>(cfg_.train, grid_, *state_, zero, choice.optimizer);
  guard_ = std::make_unique<StepGuard>(cfg_.train, choice.nonfinite);
  report_ = std::make_unique<RunReport>(cfg_, grid_, loader_->global_batch(), *family_);
  checkpointer_ = std::make_unique<Checkpointer>(cfg_, grid_, config_text_, *state_, loader_->source().describe(),
                                                 loader_->global_batch(), zero, mirror_mode_, extensions_);
  if (grid_.world_rank() == 0) print_memory_line();  // the ledger of rank 0 (pipeline stage 0, TP rank 0)
  if (grid_.world_rank() == 0) {
    make_dirs(cfg_.output.dir);
    io::write_file_atomic(cfg_.output.dir + "/config.toml", config_text_);
  }
  grid_.world().barrier();
  if (checkpointer_->resume(&progress_))  // masters (and masks) loaded: the working copy follows them
    for (TrainExtension* e : extensions_) e->on_resume();  // sparsity: the masked working copy; 16-bit: rounded
  if (dp_adapter_ && dp_adapter_->take_resumed()) apply_dp_shares(dp_adapter_->shares());  // saved adapted shares
}

Trainer::~Trainer() = default;

// The learning-rate schedule, resolved against the training split: a run given in epochs (train.epochs) gets its
// length and warm-up in steps here, written into cfg_ for everything built after. Returns the data source it read.
std::unique_ptr<DataSource> Trainer::make_schedule(const ConfigChoices& choice) {
  std::unique_ptr<DataSource> source = family_->make_source(cfg_);
  const int64_t global_batch = int64_t(cfg_.train.micro_batch_size) * cfg_.train.micro_batches * grid_.shape().dp;
  lr_ = std::make_unique<LrSchedule>(cfg_.train, choice, global_batch, source->samples_per_epoch(Split::Train));
  cfg_.train.steps = lr_->total_steps();
  cfg_.train.warmup_steps = lr_->warmup_steps();
  return source;
}

// The features that carry state of their own (extension.hpp), in the order the step loop and the Checkpointer
// call them.
void Trainer::make_extensions(const ConfigChoices& choice, const ZeroPlan& zero) {
  if (choice.sparsity != SparsityPattern::None)  // not with ZeRO: the compatibility table (features.hpp)
    sparsity_ = std::make_unique<Sparsity>(cfg_.sparsity, choice.sparsity_recipe, *state_, family_.get());
  if (state_->working() != Precision::FP32) half_masters_ = std::make_unique<HalfMasters>(*state_, zero, grid_.dp());
  model_buffers_ = std::make_unique<ModelBuffers>(model_->model_buffers(), grid_);  // BatchNorm's statistics
  scaler_ = std::make_unique<LossScaler>(cfg_.train, cfg_.dynamic_loss_scale());
  for (TrainExtension* e : {static_cast<TrainExtension*>(half_masters_.get()),
                            static_cast<TrainExtension*>(sparsity_.get()), dp_->residuals(),
                            model_buffers_->empty() ? nullptr : static_cast<TrainExtension*>(model_buffers_.get()),
                            static_cast<TrainExtension*>(dp_adapter_.get()),  // adapted DP shares: a meta entry
                            static_cast<TrainExtension*>(scaler_.get())})     // its scale and counters: meta entries
    if (e) extensions_.push_back(e);
}


// This rank's part of the pipeline schedule (train.schedule; one chunk but under the interleaved one).
std::vector<PipeOp> Trainer::pipeline_ops(PipelineSchedule schedule, int micro_batches) const {
  const Schedule kind = schedule == PipelineSchedule::GPipe         ? Schedule::GPipe
                        : schedule == PipelineSchedule::Interleaved ? Schedule::Interleaved
                                                                    : Schedule::OneFOneB;
  // micro_batches: this replica's share of the step's (parallel.dp_shares, dp/dp_shares.hpp; adaptive at pp = 1).
  return pipeline_schedule(kind, grid_.shape().pp, grid_.pp_rank(), micro_batches, cfg_.pipeline_chunks());
}

// parallel.adapt: the straggler monitor (monitor, rebalance, full), the live rebalancer (rebalance, full): of the
// pipeline stages when pp > 1, of the data-parallel shares when pp = 1, and the re-layout's decision (full).
// Under full a layout the rebalancer cannot run on (a check below refuses it) keeps the layout decision alone, with
// a note: the re-layout may move the run to one where it can; under rebalance the refusal is the run's error.
void Trainer::make_adaptation(AdaptMode mode, const std::vector<int>& partition) {
  if (mode != AdaptMode::Off)
    straggler_ = std::make_unique<StragglerMonitor>(grid_, straggler_config(cfg_.parallel.straggler_ratio));
  layout_adapter_ = LayoutAdapter::make(cfg_, grid_, partition);  // full: the re-layout's decision (or its hook)
  if (mode != AdaptMode::Rebalance && mode != AdaptMode::Full) return;
  const bool shares = grid_.shape().pp == 1;
  try {
    if (shares) check_adapt_dp_shares(cfg_, grid_.shape());
    else check_adapt_rebalance(cfg_, grid_.shape().pp);
  } catch (const Error& e) {
    if (mode == AdaptMode::Rebalance) throw;
    if (grid_.world_rank() == 0)
      std::printf("gridtrain: note: parallel.adapt = \"full\" on tp %d x pp %d x dp %d: no live rebalancer (%s); the "
                  "layout decision alone\n", grid_.shape().tp, grid_.shape().pp, grid_.shape().dp, e.what());
    return;
  }
  if (shares) dp_adapter_ = std::make_unique<DpShareAdapter>(cfg_, grid_);
  else adapter_ = std::make_unique<PipelineAdapter>(cfg_, grid_, partition, AdaptCarry{});
}

// The start line: the DP plan and its path, the model state per rank (predicted and allocated) and the
// activation ledger.
void Trainer::print_memory_line() const {
  const StateLedger pred = predicted_ledger();
  const StateLedger have = allocated_state_bytes(*state_);
  const double mib = 1048576.0;
  // The activation ledger counts the stored activations in the working type (2 bytes in bf16/fp16), the
  // LayerNorm and cross-entropy statistics in fp32 (GPT<T>::activation_bytes_per_slot, work_bytes):
  // what every slot keeps and the shared work buffers (train.recompute shifts the first to the second). The type
  // named is the model's activations' (a ResNet keeps fp32 maps under bf16 and fp16, its convolutions' copies aside).
  const double kept = double(model_->kept_activation_bytes());
  const std::string zero_line = dp_->describe();  // and which path the DP collectives take
  std::printf("gridtrain: %s | model state per rank (MiB, predicted/allocated): params %.2f/%.2f, grads %.2f/%.2f, "
              "optimizer %.2f/%.2f | activations %.2f MiB in %s (ledger, %d micro-batches in flight + work buffers; "
              "recompute %s: kept %.2f, work %.2f)\n",
              zero_line.c_str(), pred.params / mib, have.params / mib, pred.grads / mib, have.grads / mib,
              pred.optimizer / mib, have.optimizer / mib, activation_bytes() / mib,
              model_->activation_dtype() == DType::F32 ? "fp32" : cfg_.train.precision.c_str(),
              model_->slots(), cfg_.train.recompute.c_str(), kept / mib, double(model_->work_bytes()) / mib);
}

size_t Trainer::activation_bytes() const {
  return model_->kept_activation_bytes() + model_->work_bytes();
}

StepStats Trainer::train_step() {
  Comm* embed = tied_embed();
  const double t0 = MPI_Wtime();
  if (straggler_) straggler_->before_step();  // inside the step's time: the slow-rank test hook
  const CommMarks marks = comm_marks();
  loader_->take_wait_seconds();  // what validation waited is not this step's
  const double loss_scale = scaler_->scale();
  dp_->begin_step(progress_.step, loss_scale);
  test_overflow_hook(grid_.world_rank(), progress_.step + 1, dp_->some_grad());

  // Forward and backward of every micro-batch; the DP reductions go out as the last backward completes units.
  double loss_sum = 0;
  pipeline_->train_step(progress_.samples_done, loss_scale, &loss_sum, dp_->on_unit());
  std::function<void()> sum_tied_wte;
  if (embed)
    sum_tied_wte = [&] {  // the tied wte: the embedding's and the head's gradients summed
      const TensorSpec& wte = state_->layout().spec("wte");
      embed->allreduce(state_->grads() + wte.offset, wte.size, DType::F32, ReduceOp::Sum);
    };
  dp_->finish(sum_tied_wte);
  const GradBuckets::WireStats wire = dp_->wire_stats();

  const double t_opt0 = MPI_Wtime();
  // Skipped steps do not count as updates: the learning rate and AdamW's bias correction follow the updates.
  const int updates = progress_.step - progress_.skipped;
  const double lr = lr_->at(updates);
  for (TrainExtension* e : extensions_) e->before_update(updates, loss_scale);  // sparsity: clipped with the gradient
  const double norm = optimizer_->grad_norm();  // the same value on every rank: every rank decides alike
  // An fp16 overflow is the loss scaler's (it backs the scale off and skips); anything else non-finite or out of
  // bounds is the bad-step policy's. Both read the norm every rank holds alike.
  const bool overflow = scaler_->dynamic() && scaler_->update(!std::isfinite(norm), progress_.step + 1);
  std::string bad = overflow ? "" : guard_->judge_grad_norm(norm / loss_scale);
  const bool skip = overflow || !bad.empty();
  if (!skip) {
    optimizer_->step(updates + 1, lr, norm, loss_scale);
    // Sparsity: new masks, the masked working copy; 16-bit: this rank's shard of the working copy rounded
    for (TrainExtension* e : extensions_) e->after_update(updates + 1);
    dp_->after_update();  // ZeRO 1, 2: every updated shard to every rank; ZeRO 3: gathers dropped
  }
  Kokkos::fence();
  const double t_end = MPI_Wtime();

  StepTimes t = step_times(t0, t_opt0, t_end, marks);
  t.loss_sum = stage_.last() && grid_.tp_rank() == 0 ? loss_sum : 0.0;  // one rank owns the loss
  StepStats s = reduce_step_stats(t, grid_.world(), double(loader_->global_batch()) * family_->positions_per_sample());
  s.lr = lr;
  s.grad_norm = norm / loss_scale;
  s.loss_scale = loss_scale;
  s.skipped = skip;
  s.wire_bytes = dp_->has_buckets() ? wire.bytes : -1;  // this rank's (logged: world rank 0, DP rank 0 of stage 0)
  s.compression_ratio = wire.bytes > 0 ? wire.dense_fp32_bytes / wire.bytes : 0;
  s.residual_norm = wire.residual_norm;
  if (straggler_) straggler_->after_step(t, &s);
  if (bad.empty() && !overflow) bad = guard_->judge_loss(s.loss);  // the loss: known on every rank only now
  s.bad = bad;
  const BadStepAction act = guard_->settle(progress_.step + 1, bad, s.grad_norm, s.loss, !skip);  // may throw
  if (s.stop_requested) request_stop_locally();  // some rank was asked to stop: every rank stops at this step
  if (act == BadStepAction::Rollback) {
    progress_.samples_done += loader_->global_batch();  // the data go on past the bad step
    s.rolled_back_to = checkpointer_->rollback(&progress_);  // the loss scaler's counters too (load_meta)
    for (TrainExtension* e : extensions_) e->on_resume();  // as after a resume: masters and masks loaded
    return s;
  }
  progress_.step += 1;
  progress_.samples_done += loader_->global_batch();
  progress_.loss = s.loss;
  progress_.lr = s.lr;
  progress_.skipped += skip ? 1 : 0;
  return s;
}

// Seconds each group's communicators have spent blocked so far (their totals grow over the run).
Trainer::CommMarks Trainer::comm_marks() {
  return {blocked(&grid_.tp()), blocked(&grid_.pp()), blocked(&grid_.dp()),
          blocked(&grid_.mp()) + blocked(tied_embed())};
}

// This rank's times of the step that ran from t0 (optimizer from t_opt0) to t_end, split by phase and by the
// group that blocked (against the marks taken at its start), and whether a stop was asked for.
StepTimes Trainer::step_times(double t0, double t_opt0, double t_end, const CommMarks& start) {
  StepTimes t;
  // A stop file (train.stop_file, written by slurm/train.sbatch on the time-limit warning) is looked at by rank 0
  // only: one stat per step on the shared file system, not one per rank.
  const std::string& stop_file = cfg_.train.stop_file;
  t.stop_requested = stop_requested_locally() ||
                     (grid_.world_rank() == 0 && !stop_file.empty() && file_exists(stop_file));
  const double data_s = loader_->take_wait_seconds();
  const CommMarks now = comm_marks();
  t.step_ms = (t_end - t0) * 1e3;
  t.fwd_ms = (pipeline_->fwd_s() - pipeline_->comm_fwd_s() - data_s) * 1e3;
  t.bwd_ms = (pipeline_->bwd_s() - pipeline_->comm_bwd_s()) * 1e3;
  t.opt_ms = (t_end - t_opt0) * 1e3;
  t.data_ms = data_s * 1e3;
  t.comm_tp_ms = (now.tp - start.tp) * 1e3;
  t.comm_pp_ms = (now.pp - start.pp) * 1e3;
  t.comm_dp_ms = (now.dp - start.dp) * 1e3;
  t.comm_other_ms = (now.other - start.other) * 1e3;
  t.energy_j = report_->step_energy_j();
  return t;
}

ValResult Trainer::validate() {
  // data.val_batches global batches of the val split (the same samples for every layout with the same global
  // batch, and the same ones every time, so successive values compare).
  for (TrainExtension* e : extensions_) e->before_validation();  // BatchNorm: DP rank 0's running statistics
  double sums[2] = {0, 0};  // loss, top-1 hits
  pipeline_->validate(cfg_.data.val_batches, &sums[0], &sums[1]);
  if (!(stage_.last() && grid_.tp_rank() == 0)) sums[0] = sums[1] = 0;
  grid_.world().allreduce(sums, 2, DType::F64, ReduceOp::Sum);
  const double samples = double(cfg_.data.val_batches) * double(loader_->global_batch());
  ValResult r;
  r.loss = sums[0] / (samples * family_->positions_per_sample());
  if (std::string(family_->position_name()) == "image") r.top1 = sums[1] / samples;
  return r;
}

void Trainer::save(const std::string& reason) {
  loader_->quiesce();  // no HDF5 read in flight while the checkpoint is written
  checkpointer_->save(progress_, reason);
  guard_->on_checkpoint();
}

void Trainer::finish(const std::string& status) {
  RunSummaryInputs in;
  in.status = status;
  in.step = progress_.step;
  in.history = &history_;
  in.last_loss = progress_.loss;
  in.resumed_from = checkpointer_->resumed_from();
  in.data = loader_->source().describe();
  in.checkpoint_dir = checkpointer_->dir();
  in.state_bytes = state_->bytes();
  in.skipped = progress_.skipped;
  in.bad_steps = guard_->counts();
  in.nonfinite_policy = guard_->policy();
  in.extensions = &extensions_;  // their own fields: the loss scale, the sparse FLOP ledger
  const StateLedger pred = predicted_ledger();
  const StateLedger have = allocated_state_bytes(*state_);
  const double p3[3] = {double(pred.params), double(pred.grads), double(pred.optimizer)};
  const double a3[3] = {double(have.params), double(have.grads), double(have.optimizer)};
  std::copy(p3, p3 + 3, in.ledger_predicted);
  std::copy(a3, a3 + 3, in.ledger_allocated);
  in.zero_stage = dp_->zero().stage;
  in.activation_bytes = activation_bytes();
  in.activation_dtype = cfg_.train.precision;
  in.adapt_decisions_json = adapt_decisions_json();
  report_->write_summary(in);
}

// Every evaluation of the run's adapters in step order ("" when none runs): the rebalancer's of this layout and,
// under parallel.adapt = full, of the layouts before it, and the layout decider's.
std::string Trainer::adapt_decisions_json() const {
  std::vector<std::string> all;
  auto add = [&](const std::vector<std::string>& v) { all.insert(all.end(), v.begin(), v.end()); };
  if (layout_adapter_) add(layout_adapter_->earlier_rebalancing());
  if (adapter_) add(adapter_->carry().decisions);
  if (dp_adapter_) add(dp_adapter_->decisions());
  const bool decides_layout = layout_adapter_ && layout_adapter_->decides();
  if (decides_layout) add(layout_adapter_->decisions());
  if (all.empty() && !adapter_ && !dp_adapter_ && !decides_layout) return "";
  return json_list(by_step(std::move(all)));
}

// At a step boundary: this replica's new share of the global batch (the loader's samples, the schedule).
void Trainer::apply_dp_shares(const std::vector<int>& shares) {
  loader_->set_shares(shares, progress_.samples_done);
  pipeline_->set_ops(pipeline_ops(cfg_.choices().schedule, shares[size_t(grid_.dp_rank())]));
}

StateLedger Trainer::predicted_ledger() const { return dp_->predicted_ledger(); }

int Trainer::run() {
  install_stop_signal_handlers();
  // A request that came while the model was built or resumed: nothing new to save, end now (startup_stop.hpp).
  stop_point(grid_.world_mpi(), "the first step");
  loader_->restart_at(progress_.samples_done);  // prefetching starts at the first micro-batch of this run
  const int steps = cfg_.train.steps;
  if (progress_.step >= steps) {
    if (grid_.world_rank() == 0) std::printf("gridtrain: run already complete at step %d of %d\n", progress_.step, steps);
    finish("finished");
    return kExitOk;
  }
  while (progress_.step < steps) {
    test_fail_hook(grid_.world_rank(), progress_.step + 1);
    const int attempted = progress_.step + 1;
    StepStats s = train_step();
    history_.push_back(s);
    if (s.rolled_back_to >= 0) {  // nothing of the bad step is kept: no validation, no checkpoint
      report_->log_step(attempted, s);
      continue;
    }
    const int step = progress_.step;
    if (cfg_.data.val_every > 0 && step % cfg_.data.val_every == 0) {
      const ValResult v = validate();
      history_.back().val_loss = v.loss;
      history_.back().val_top1 = v.top1;
    }
    const AdaptOutcome adapt = step < steps ? adapt_after(step) : AdaptOutcome{};
    report_->log_step(step, history_.back());
    if (after_step) after_step(step);
    if (cfg_.checkpoint.every > 0 && step % cfg_.checkpoint.every == 0) save("every");
    if (adapt.move) {  // main.cpp builds the trainer on the new partition, which adopts this state (no disk)
      handoff_ = hand_off(adapter_->proposed());
      repartition_ = stage_blocks_text(adapter_->proposed());
      return kExitOk;
    }
    if (adapt.relayout) {
      hand_off_relayout(*adapt.relayout);
      return kExitOk;
    }
    if (step < steps && rebalancer_->after_step(int(history_.size()))) {
      // A re-partition is a resume (checkpoints hold global shapes): main.cpp builds the trainer again on the
      // new partition and it resumes from this checkpoint.
      if (checkpointer_->last_saved_step() != step) save("rebalance");
      repartition_ = rebalancer_->proposed_blocks();
      return kExitOk;
    }
    const bool slice_done = cfg_.train.max_steps_per_run > 0 && int(history_.size()) >= cfg_.train.max_steps_per_run;
    if ((stop_requested_locally() || slice_done) && step < steps) {
      if (checkpointer_->last_saved_step() != step) save(slice_done ? "max_steps_per_run" : "stop request");
      if (grid_.world_rank() == 0)
        std::printf("gridtrain: stopped %s at step %d; checkpoint in %s\n",
                    slice_done ? "after train.max_steps_per_run" : "on request (signal or stop file)", step,
                    checkpointer_->dir().c_str());
      finish("preempted");
      return kExitPreempted;
    }
  }
  if (cfg_.checkpoint.save_final && checkpointer_->last_saved_step() != progress_.step) save("final");
  finish("finished");
  return kExitOk;
}

// After step `step` (not the last): the adapters' decisions, each agreed over the world and logged in this step's
// metrics line. parallel.adapt = rebalance (and full): blocks to move, moved after the step's checkpoint, or (pp =
// 1) new data-parallel shares from the next step on. parallel.adapt = full (or its test hook): another layout from
// the next step, held while a rank or a stage is slower than its peers (the monitor's all-gathered compute,
// layout_guard.hpp) or the shares are uneven; not in the step a block move was decided (the move comes first).
Trainer::AdaptOutcome Trainer::adapt_after(int step) {
  AdaptOutcome out;
  StepStats* s = &history_.back();
  out.move = adapter_ && adapter_->after_step(step, straggler_->last_compute_ms(), s);
  if (dp_adapter_ && dp_adapter_->after_step(step, straggler_->last_compute_ms(), s)) apply_dp_shares(dp_adapter_->shares());
  if (!layout_adapter_ || out.move) return out;
  const std::vector<double> no_compute;
  const std::vector<double>& compute = straggler_ ? straggler_->last_compute_ms() : no_compute;
  const std::string uneven = dp_adapter_ ? dp_adapter_->uneven_reason() : std::string();
  out.relayout = layout_adapter_->after_step(step, compute, uneven, s);
  return out;
}

// The state for the trainer main.cpp builds on the new grid: every tensor (its ranks hold other slices) and the
// layout adapter's carry. The rebalancer of the new layout starts afresh (its partitions and shares were this
// grid's); what it decided here stays in the run's list.
void Trainer::hand_off_relayout(const LayoutChoice& to) {
  relayout_ = to;
  handoff_ = hand_off({});
  handoff_->relayout = true;
  std::vector<std::string>& earlier = handoff_->layout.earlier_rebalancing;
  const std::vector<std::string> here = adapter_      ? adapter_->carry().decisions
                                        : dp_adapter_ ? dp_adapter_->decisions()
                                                      : std::vector<std::string>{};
  earlier.insert(earlier.end(), here.begin(), here.end());
  handoff_->adapt = AdaptCarry{};
}

std::vector<std::pair<std::string, std::vector<float>>> Trainer::gather_params() { return gather(Buffer::Master); }

std::unique_ptr<StateHandoff> Trainer::hand_off(const std::vector<int>& partition) {
  auto h = std::make_unique<StateHandoff>();
  h->started = MPI_Wtime();
  // partition empty (a re-layout): every tensor is kept, the ranks' slices on the new grid are other ones.
  const std::set<std::string> mine = partition.empty() ? std::set<std::string>{} :
      tensors_of_stage(cfg_, grid_.shape().pp, grid_.pp_rank(), partition, grid_.tp_rank(), grid_.shape().tp);
  for (auto [buffer, into] : {std::pair{Buffer::Master, &h->master}, {Buffer::AdamM, &h->adam_m}, {Buffer::AdamV, &h->adam_v}}) {
    *into = gather(buffer);
    if (!partition.empty()) keep_only(into, mine);  // before the next gather: one buffer's whole model at a time
  }
  h->progress = progress_;
  for (const TrainExtension* e : extensions_) e->save_meta(h->extension_meta);  // as into a checkpoint
  h->history = history_;
  if (adapter_) h->adapt = adapter_->carry();
  if (layout_adapter_) h->layout = layout_adapter_->carry();  // across a block move too (parallel.adapt = full)
  return h;
}

void Trainer::adopt(StateHandoff h) {
  // The fp32 state of this rank's elements from the global tensors; the working copy follows the master as
  // after a resume (the extensions' on_resume: rounded for 16-bit, the ZeRO shards gathered).
  scatter_global(*state_, state_->master_id(), h.master, mirror_mode_);
  scatter_global(*state_, Buffer::AdamM, h.adam_m, mirror_mode_);
  scatter_global(*state_, Buffer::AdamV, h.adam_v, mirror_mode_);
  for (TrainExtension* e : extensions_) {
    e->load_meta(h.extension_meta);  // the loss scaler's scale and counters
    e->on_resume();
  }
  dp_->after_update();  // as after a step: the shards to every rank (ZeRO 1, 2), no stale gathered unit (3)
  progress_ = h.progress;
  history_ = std::move(h.history);
  grid_.world().barrier();
  double took = MPI_Wtime() - h.started;  // the gathers, the rebuild on the new partition and the scatter
  grid_.world().allreduce(&took, 1, DType::F64, ReduceOp::Max);  // one figure on every rank: decisions agree
  if (grid_.world_rank() == 0)
    std::printf("gridtrain: adapt: continuing at step %d on blocks %s (tp %d x pp %d x dp %d); the move took %.3f s\n",
                progress_.step, stage_blocks_text(partition_).c_str(), grid_.shape().tp, grid_.shape().pp,
                grid_.shape().dp, took);
  PipelineAdapter::set_move_cost(&h.adapt, took * 1e3);
  if (h.relayout) LayoutAdapter::set_switch_cost(&h.layout, took * 1e3);
  if (adapter_) adapter_ = std::make_unique<PipelineAdapter>(cfg_, grid_, partition_, std::move(h.adapt));
  if (layout_adapter_) layout_adapter_->adopt(std::move(h.layout));
}

std::vector<std::pair<std::string, std::vector<float>>> Trainer::gather(Buffer buffer) {
  std::vector<std::pair<std::string, std::vector<float>>> out;
  const TensorLayout& layout = state_->layout();
  // The host reads the buffer through its mirror (CPU builds: the buffer itself, no copy); a ZeRO shard (the
  // fp32 master of a 16-bit run, the ZeRO-3 parameters) is all-gathered over DP first.
  const Buffer name = buffer == Buffer::Master ? state_->master_id() : buffer;
  const Range extent = state_->buffer(name).extent;
  HostMirror<float> mirror(state_->data<float>(name), extent.size(), mirror_mode_);
  mirror.pull();
  const float* master = mirror.data();
  std::vector<float> whole_buffer;
  if (extent.size() != layout.size()) {
    whole_buffer.resize(layout.size());
    std::copy(master, master + extent.size(), whole_buffer.begin() + long(extent.begin));
    grid_.dp().allgather(whole_buffer.data() + extent.begin, whole_buffer.data(), extent.size(), DType::F32);
    master = whole_buffer.data();
  }
  // Every global tensor at its place in one flat buffer and one all-reduce for all of them: one per tensor cost
  // seconds for a few hundred tensors with ranks sharing cores (each all-reduce ~10 ms there), and the live
  // rebalance's move gathers three buffers (state_handoff.hpp).
  const std::vector<TensorSpec> globals = family_->global_specs();
  size_t total = 0;
  for (const TensorSpec& g : globals) total += size_t(g.global_size());
  std::vector<float> flat(total, 0.0f);
  size_t at = 0;
  for (const TensorSpec& g : globals) {
    if (layout.has(g.name)) {
      const TensorSpec& s = layout.spec(g.name);
      if (grid_.dp_rank() == 0 && owner(s, grid_))
        for (size_t i = 0; i < owned_range(s).size(); ++i)  // a replicated key/value head once
          flat[at + size_t(s.global_index(int64_t(i)))] = master[s.offset + i];
    }
    at += size_t(g.global_size());
  }
  grid_.world().allreduce(flat.data(), flat.size(), DType::F32, ReduceOp::Sum);
  at = 0;
  for (const TensorSpec& g : globals) {
    const size_t n = size_t(g.global_size());
    out.emplace_back(g.name, std::vector<float>(flat.begin() + long(at), flat.begin() + long(at + n)));
    at += n;
  }
  return out;
}

}  // namespace gt
