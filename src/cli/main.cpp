// The gridtrain command.
//   gridtrain [train] [--config PRESET|DECK] [section.key=value ...]   train (default command)
//   gridtrain prepare --tokenizer byte|gpt2 --out FILE.h5 INPUT...      text -> HDF5 token dataset
//   gridtrain inspect PATH                                              what a checkpoint or dataset holds
//   gridtrain keys [--doc]                                              every config key with its default [documented]
//   gridtrain plan --config DECK --cluster C --devices N --global-batch B  layouts that fit, ranked (src/plan)
#include <mpi.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "kernels/device_stream.hpp"
#include "kernels/gemm.hpp"
#include "src/cli/auto_layout.hpp"
#include "src/train/startup_stop.hpp"
#include "kernels/kokkos_compat.hpp"
#include "src/comm/watchdog.hpp"
#include "src/core/config.hpp"
#include "src/core/error.hpp"
#include "src/core/orphan.hpp"
#include "src/core/stop_signal.hpp"
#include "src/core/test_hooks.hpp"
#include "src/data/prepare.hpp"
#include "src/grid/grid.hpp"
#include "src/io/config_agree.hpp"
#include "src/io/h5_probe.hpp"
#include "src/io/inspect.hpp"
#include "src/io/run_dirs.hpp"
#include "src/model/gpt.hpp"
#include "src/plan/plan_cli.hpp"
#include "src/data/dataset_inspect.hpp"
#include "src/train/checkpoint_size.hpp"
#include "src/train/memory_check.hpp"
#include "src/train/resume_requirements.hpp"
#include "src/train/trainer.hpp"

namespace {

const char* kUsage =
    "usage: gridtrain [train] [--config PRESET|DECK] [section.key=value ...]\n"
    "       gridtrain prepare --tokenizer byte|gpt2 --out FILE.h5 [--val-fraction F] INPUT...\n"
    "       gridtrain inspect PATH\n"
    "       gridtrain keys [--doc]\n"
    "       gridtrain plan --config DECK --cluster NAME --devices N --global-batch B [--json] [--plot OUT.png]\n"
    "       gridtrain plan --calibrate RUN_DIR... [--out FILE.toml]   (gridtrain plan --help: every option)\n"
    "presets: tiny, small, gpt2-124m, llama-tiny, llama-1b, llama3-8b, resnet-tiny, resnet20-fmnist, resnet50-imagenet (inputs/); every key of the deck can be\n"
    "overridden as section.key=value\n";

struct UsageError : gt::Error {
  using gt::Error::Error;
};

std::string algo_name(gt::AllreduceAlgo a) {
  switch (a) {
    case gt::AllreduceAlgo::Ring: return "ring";
    case gt::AllreduceAlgo::Shm: return "shm";
    case gt::AllreduceAlgo::Library: return "library";
    case gt::AllreduceAlgo::Auto: return "auto";
  }
  return "?";
}

int world_rank() {
  int r = 0, init = 0;
  MPI_Initialized(&init);
  if (init) MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// A private duplicate of the world used only to find out whether an error is shared (see fail()).
MPI_Comm g_error_comm = MPI_COMM_NULL;

// Prints the error and ends the process with `code`. An error every rank raised alike (a bad config or grid, a
// checkpoint problem the ranks agreed on) ends with one line from rank 0 and a normal exit of every rank: the
// ranks find each other in a barrier on g_error_comm within kAgreeSeconds. An error only some ranks saw is
// printed by each of them and aborts the job, since the others may be waiting in a collective. (Aborting
// right after printing also lost the line now and then: mpiexec tears down before forwarding it.)
[[noreturn]] void fail(const std::string& msg, int code) {
  constexpr double kAgreeSeconds = 10.0;
  const int rank = world_rank();
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  bool shared = size == 1;
  if (!shared && g_error_comm != MPI_COMM_NULL) {
    MPI_Request req;
    MPI_Ibarrier(g_error_comm, &req);
    int done = 0;
    const double deadline = MPI_Wtime() + kAgreeSeconds;
    while (!done && MPI_Wtime() < deadline) {
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (!done) usleep(1000);
    }
    shared = done != 0;
  }
  if (!shared || rank == 0) {
    std::fprintf(stderr, "gridtrain: error: %s\n", msg.c_str());
    std::fflush(stderr);
  }
  if (!shared) {
    usleep(300000);  // let mpiexec forward the line before the abort tears the job down
    MPI_Abort(MPI_COMM_WORLD, code);
  }
  if (Kokkos::is_initialized()) Kokkos::finalize();
  MPI_Comm_free(&g_error_comm);
  MPI_Finalize();
  std::exit(code);
}

// `gridtrain train`'s arguments: the deck (a preset name or a path) and the section.key=value overrides.
struct TrainArgs {
  std::string deck = "tiny";
  std::vector<std::string> overrides;
};
TrainArgs parse_train_args(const std::vector<std::string>& args) {
  TrainArgs t;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--config" || a == "-c") {
      if (i + 1 >= args.size()) throw UsageError("--config needs a preset name or a deck path");
      t.deck = args[++i];
    } else if (a.rfind("--config=", 0) == 0) {
      t.deck = a.substr(9);
    } else if (a.rfind("--", 0) == 0 && a.find('=') != std::string::npos) {
      t.overrides.push_back(a.substr(2));  // --section.key=value works too
    } else if (a.find('=') != std::string::npos) {
      t.overrides.push_back(a);
    } else {
      throw UsageError("unexpected argument '" + a + "' (expected section.key=value)");
    }
  }
  return t;
}

// The GEMM library and its thread count (kernels.gemm, parallel.blas_threads), before any kernel runs.
void select_gemm(const gt::Config& cfg, const gt::ConfigChoices& choice) {
  gt::gemm_set_threads(cfg.parallel.blas_threads);
  try {
    gt::gemm_select(choice.gemm == gt::GemmChoice::OneDNN     ? gt::GemmBackend::OneDNN
                    : choice.gemm == gt::GemmChoice::OpenBLAS ? gt::GemmBackend::OpenBLAS
                                                              : gt::GemmBackend::Auto);
  } catch (const std::exception& e) {
    throw gt::Error(std::string("config key 'kernels.gemm': ") + e.what());
  }
}

// parallel.layout = auto: the planner's choice, the same on every rank (it agrees over MPI_COMM_WORLD).
void apply_auto_layout(gt::Config& cfg) {
  const gt::AutoLayout a = gt::choose_auto_layout(cfg, MPI_COMM_WORLD);
  cfg.parallel.tp = a.tp;
  cfg.parallel.pp = a.pp;
  cfg.parallel.dp = a.dp;
  cfg.parallel.auto_choice = a.choice;
  cfg.parallel.auto_runner_up = a.runner_up;
  cfg.parallel.auto_cluster = a.cluster;
}

// Rank 0's start line: the deck, the grid, the model, the batch, the communication path and the GEMM library.
void print_start_line(const gt::Config& cfg, gt::Grid& grid, const std::string& deck_path,
                      const gt::ConfigChoices& choice) {
  if (grid.world_rank() != 0) return;
  const char* fallback = std::getenv("GRIDTRAIN_BLAS_FALLBACK");
  const gt::ModelConfig& m = cfg.model;
  const std::string model = m.resnet_kind() ? gt::model_signature(m)
                                            : "L=" + std::to_string(m.n_layer) + " d=" + std::to_string(m.d_model) +
                                                  " heads=" + std::to_string(m.n_head) + " T=" + std::to_string(m.seq_len) +
                                                  " V=" + std::to_string(m.vocab_size);
  std::printf("gridtrain: %s | world %d = tp %d x pp %d x dp %d | %s | batch %d x %d x %d"
              " | comm %s | BLAS %s%s%s | GEMM %s%s\n",
              deck_path.c_str(), grid.world_size(), grid.shape().tp, grid.shape().pp, grid.shape().dp, model.c_str(),
              cfg.train.micro_batch_size, cfg.train.micro_batches, grid.shape().dp,
              grid.backend() == gt::CommBackend::Nccl
                  ? "nccl"
                  : (std::string(gt::comm_backend_name(grid.backend())) + "/" + algo_name(grid.dp().allreduce_algo()) +
                     (grid.backend() == gt::CommBackend::MpiStaged ? " (device buffers through pinned host copies)" : ""))
                        .c_str(),
              gt::blas_core_name(),
              fallback ? " (library chose " : "", fallback ? (std::string(fallback) + ")").c_str() : "",
              gt::gemm_describe().c_str(),
              choice.layout == gt::LayoutMode::Auto ? (" | layout auto on " + cfg.parallel.auto_cluster + ": " +
                                               cfg.parallel.auto_choice + "; runner-up " + cfg.parallel.auto_runner_up)
                                                  .c_str()
                                            : "");
  std::fflush(stdout);
}

// Before any training time is spent: the test hook's lone failure, the memory check, writable directories with
// room for a checkpoint; returns the lock that keeps other runs out of the checkpoint directory until the end.
std::unique_ptr<gt::io::RunDirLock> preflight(const gt::Config& cfg, gt::Grid& grid) {
  // Test hook test_hooks::fail_hook() (rank r, no step): world rank r fails alone here while the others go on into the
  // trainer's first collectives (the abort path of fail()).
  // (With a step the trainer's hook fails instead; src/core/test_hooks.hpp.)
  if (gt::test_hooks::fail_hook().fails_at_start(grid.world_rank()))
    throw gt::Error("test hook: rank " + std::to_string(grid.world_rank()) + " failed alone");
  gt::stop_point(grid.world_mpi(), "the memory check");
  gt::check_memory_fits(cfg, grid);  // before anything is allocated: one line instead of a failed allocation
  gt::stop_point(grid.world_mpi(), "the directory checks");
  gt::io::check_run_dirs(grid.world_mpi(), cfg.output.dir, cfg.checkpoint_dir(),
                         gt::io::checkpoint_file_bytes(gt::checkpoint_file_shape(cfg, grid.world_size())));
  return std::make_unique<gt::io::RunDirLock>(grid.world_mpi(), cfg.checkpoint_dir());
}

// A live re-layout of the run configured by *cfg to `to`: its grid, with *cfg now its configuration; or null when
// that layout does not fit in memory (the check agrees on every rank): *cfg unchanged, the refusal in the handover's
// carry, and the run continues on the layout it had from the state handed over (nothing lost; the layout decider
// never proposes that one again).
std::unique_ptr<gt::Grid> relaid_grid(gt::Config* cfg, const gt::LayoutChoice& to, gt::StateHandoff* handoff,
                                      gt::AllreduceAlgo algo, gt::CommBackend backend) {
  const gt::Config next_cfg = gt::relaid_config(*cfg, to);
  auto next = std::make_unique<gt::Grid>(MPI_COMM_WORLD, to.grid.tp, to.grid.pp, to.grid.dp, algo, backend);
  try {
    gt::check_memory_fits(next_cfg, *next);
    *cfg = next_cfg;
    return next;
  } catch (const gt::Error& e) {
    const int rank = next->world_rank();
    next.reset();
    gt::LayoutAdapter::switch_refused(&handoff->layout, handoff->progress.step, to, e.what());
    if (rank == 0)
      std::printf("gridtrain: adapt: the switch to %s cannot be made (%s); continuing at step %d on %s from the state "
                  "handed over, nothing lost\n", gt::layout_text(to).c_str(), e.what(), handoff->progress.step,
                  gt::layout_text(gt::layout_of(*cfg, {cfg->parallel.tp, cfg->parallel.pp, cfg->parallel.dp})).c_str());
    return nullptr;
  }
}

int cmd_train(const std::vector<std::string>& args) {
  gt::Config cfg;
  const TrainArgs targs = parse_train_args(args);
  const std::string deck_path = gt::resolve_deck(targs.deck);
  cfg.load_file(deck_path);
  for (const auto& o : targs.overrides) cfg.set(o);
  const gt::ConfigChoices choice = cfg.validate();
  // Before the grid's first collectives: every rank must run the same build with the same configuration.
  gt::io::check_config_agreement(MPI_COMM_WORLD, cfg.to_map(), gt::io::build_identity());
  gt::stop_point(MPI_COMM_WORLD, "the layout and the process grid");
  select_gemm(cfg, choice);

#if defined(KOKKOS_ENABLE_CUDA)
  constexpr bool device_is_cuda = true;
#else
  constexpr bool device_is_cuda = false;
#endif
  // test_hooks::device_memory_as_cuda(): the CPU build checks the communicator choice as a CUDA build would (the
  // refusal of MPI on device memory is tested without a GPU); nothing else changes.
  const bool check_as_cuda = device_is_cuda || gt::test_hooks::device_memory_as_cuda();
  if (choice.layout == gt::LayoutMode::Auto) apply_auto_layout(cfg);
  // NCCL needs a GPU per rank: with more ranks than GPUs on a node (tests, or several ranks on a workstation's one
  // GPU) auto takes host-staged MPI.
  const bool sharing = check_as_cuda && gt::ranks_share_device(MPI_COMM_WORLD, gt::device_count());
  const gt::CommBackend backend =
      gt::resolve_comm_backend(cfg.parallel.comm, check_as_cuda, gt::mpi_reports_cuda_support(), sharing);
  gt::Grid grid(MPI_COMM_WORLD, cfg.parallel.tp, cfg.parallel.pp, cfg.parallel.dp,
                gt::device_allreduce_algo(gt::parse_allreduce_algo(cfg.parallel.allreduce), backend, device_is_cuda),
                backend);
  cfg.parallel.dp = grid.shape().dp;
  print_start_line(cfg, grid, deck_path, choice);
  const auto lock = preflight(cfg, grid);
  gt::stop_point(grid.world_mpi(), "building the model");
  // parallel.rebalance = auto may end a trainer's run to continue on a new pipeline partition: the next trainer
  // resumes from the checkpoint the first just wrote. In this process rather than through exit code 75 and a
  // restart: the grid and the world stay as they are, only stage boundaries move, so nothing needs a new job,
  // and it works the same under mpiexec alone as in the Slurm chain (docs/planner.md, "Adaptive").
  // From here a rank blocked in one communication call for train.watchdog_s names the missing ranks and aborts.
  gt::watchdog::Watchdog watchdog(cfg.train.watchdog_s, cfg.output.dir + "/heartbeat", grid.world_rank(),
                                  cfg.output.dir + "/watchdog.log");
  // parallel.adapt = rebalance moves blocks the same way but hands the state over in memory (no checkpoint): the
  // next trainer is built without a resume and adopts it.
  std::unique_ptr<gt::StateHandoff> handoff;
  // A live re-layout (src/train/adapt/layout_adapter.hpp) continues on a new grid of the same world, built once the
  // old trainer is gone (relaid_grid); the first grid is kept (unused) until the end.
  std::unique_ptr<gt::Grid> relaid;
  std::optional<gt::LayoutChoice> switching_to;  // the layout the last trainer asked to continue on
  for (;;) {
    if (switching_to) {
      const gt::AllreduceAlgo algo =
          gt::device_allreduce_algo(gt::parse_allreduce_algo(cfg.parallel.allreduce), backend, device_is_cuda);
      // the previous re-layout's grid goes: no trainer uses it any more
      if (auto next = relaid_grid(&cfg, *switching_to, handoff.get(), algo, backend)) relaid = std::move(next);
      switching_to.reset();
    }
    gt::Grid& on = relaid ? *relaid : grid;
    gt::Config build = cfg;
    if (handoff) build.checkpoint.resume = "none";
    gt::Trainer trainer(build, on, cfg.to_toml());
    if (handoff) trainer.adopt(std::move(*handoff));
    const int code = trainer.run();
    if (const auto& to = trainer.relayout()) {
      switching_to = *to;
      handoff = trainer.take_handoff();
      continue;
    }
    if (trainer.repartition().empty()) return code;
    cfg.parallel.stage_blocks = trainer.repartition();
    handoff = trainer.take_handoff();
    if (handoff) continue;
    cfg.parallel.rebalance = "off";  // once per run; the run's config.toml keeps the partition for restarts
    cfg.parallel.rebalanced_from = trainer.rebalance_report();
    cfg.checkpoint.resume = "auto";  // the checkpoint just written is the newest
  }
}

int cmd_inspect(const std::vector<std::string>& args) {
  if (args.size() != 1) throw UsageError("inspect takes exactly one PATH");
  // libhdf5 crashes or hangs on some damaged metadata: find out in a child process first (one line, exit 1).
  if (std::string problem = gt::io::hdf5_probe_problem(args[0]); !problem.empty())
    throw gt::Error(args[0] + ": " + problem);
  const std::string kind = gt::hdf5_file_kind(args[0]);
  if (kind == "checkpoint") {
    // The requirements a run restarted from this checkpoint's own configuration would apply: the verdict is
    // then the resume's (src/train/resume_requirements.hpp).
    gt::CheckpointRequirements req;
    std::string problem;
    try {
      req = gt::requirements_of_checkpoint(args[0], gt::read_checkpoint_meta(MPI_COMM_SELF, args[0]));
    } catch (const gt::Error& e) {
      problem = e.what();
    }
    return gt::inspect_checkpoint(args[0], std::cout, req, problem);
  }
  if (kind == "dataset") {
    gt::inspect_dataset(args[0], std::cout);
    return 0;
  }
  if (kind == "image_dataset")  // issue 21: the format is in src/vision/image_dataset.hpp
    throw gt::Error(args[0] + ": an image dataset; inspect does not read those yet (h5ls -r shows its layout)");
  throw gt::Error(args[0] + ": not a gridtrain checkpoint or dataset (no gridtrain_kind attribute)");
}

}  // namespace

int main(int argc, char** argv) {
  // A child started to read an HDF5 file on the run's behalf (src/io/h5_probe.hpp) does only that: no MPI, no
  // Kokkos, no signal handlers of the run.
  if (const int probe = gt::io::serve_probe_if_asked(argc, argv); probe >= 0) return probe;
  // First of all: from here on SIGTERM/SIGUSR1 (Slurm's time-limit warning can come at any moment, even during
  // start-up) only ask the trainer to checkpoint and stop; a request survives the re-exec just below.
  gt::install_stop_signal_handlers();
  gt::die_with_launcher();  // kept across the re-exec below
  gt::prepare_stop_signals_for_exec();
  gt::select_blas_kernels(argv);  // may execute the program again with better BLAS kernels (gemm.hpp)
  gt::install_stop_signal_handlers();  // no re-exec happened: unblock the signals again
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  // MPICH puts its own SIGUSR1 handler in place during MPI_Init (it calls ours as well, but swallows the signal
  // when there was none before: that lost a time-limit warning during start-up); ours goes back on top.
  gt::install_stop_signal_handlers();
  MPI_Comm_dup(MPI_COMM_WORLD, &g_error_comm);
  std::vector<std::string> args(argv + 1, argv + argc);
  std::string cmd = "train";
  if (!args.empty() && (args[0] == "train" || args[0] == "prepare" || args[0] == "inspect" || args[0] == "keys" || args[0] == "plan" ||
                        args[0] == "help" || args[0] == "--help" || args[0] == "-h")) {
    cmd = args[0];
    args.erase(args.begin());
  }
  if (cmd != "train") gt::restore_default_stop_signals();  // only training stops with a checkpoint
  int code = 0;
  try {
    if (cmd == "help" || cmd == "--help" || cmd == "-h") {
      if (world_rank() == 0) std::fputs(kUsage, stdout);
    } else if (cmd == "keys") {
      // --doc: the documented table of every key (docs/config.md holds the same text; test cli_config_doc)
      if (!args.empty() && args[0] != "--doc") throw UsageError("keys takes only --doc, got '" + args[0] + "'");
      const std::string text = args.empty() ? gt::Config().to_toml() : gt::Config::keys_doc();
      if (world_rank() == 0) std::fputs(text.c_str(), stdout);
    } else if (cmd == "plan") {
      if (!args.empty() && (args[0] == "--help" || args[0] == "-h")) {
        if (world_rank() == 0) std::fputs(gt::plan::kPlanUsage, stdout);
      } else if (world_rank() == 0) {
        code = gt::plan::plan_main(args);
      }
    } else if (cmd == "prepare") {
      std::vector<char*> pargv{const_cast<char*>("prepare")};
      for (auto& a : args) pargv.push_back(a.data());
      code = gt::prepare_main(static_cast<int>(pargv.size()), pargv.data());
    } else {
      Kokkos::initialize(argc, argv);
      code = cmd == "inspect" ? cmd_inspect(args) : cmd_train(args);
      Kokkos::finalize();
    }
  } catch (const gt::StoppedDuringStartup& e) {  // every rank, agreed: a normal end, exit 75
    if (world_rank() == 0)
      std::printf("gridtrain: stopped on request (signal) during start-up, before %s; no step trained since the "
                  "start, nothing to save\n", e.what());
    std::fflush(stdout);
    if (Kokkos::is_initialized()) Kokkos::finalize();
    code = gt::kExitPreempted;
  } catch (const UsageError& e) {
    if (world_rank() == 0) std::fputs(kUsage, stderr);
    fail(e.what(), gt::kExitUsage);
  } catch (const gt::Error& e) {
    fail(e.what(), gt::kExitError);
  } catch (const std::exception& e) {
    fail(std::string("internal error: ") + e.what(), gt::kExitError);
  }
  MPI_Comm_free(&g_error_comm);
  MPI_Finalize();
  return code;
}
