#pragma once
// Stop requests: SIGTERM and SIGUSR1 ask a training run to write a checkpoint and stop at the next step boundary
// (Slurm's --signal warning before a time limit, scancel, a preemption). The handler only sets a flag, so a signal
// is never fatal once gridtrain has started: the `gridtrain` launcher (src/cli/launcher.cpp) starts the program with
// the signals blocked, main() installs the handler before anything else and only then unblocks them, and a request
// that arrives while the program executes itself again (kernels/gemm_blas.cpp) is carried across the exec.
// One exception: a second SIGTERM after a first SIGTERM ends the process at once, so that a run stuck where it
// cannot reach a step boundary still ends on `kill` twice (Slurm's SIGTERM after its SIGUSR1 warning is a first).
namespace gt {

// Installs the handlers (idempotent), takes over a request carried across an exec, unblocks the signals.
void install_stop_signal_handlers();
// Blocks the stop signals and records a request already seen in the environment, so that an exec() that follows
// neither loses a pending signal (the kernel keeps it pending across exec) nor the flag (the environment does).
void prepare_stop_signals_for_exec();
// For commands that do not train (prepare, inspect): the default action again, and a request already received
// ends the process as the signal would have.
void restore_default_stop_signals();

bool stop_requested_locally();
void request_stop_locally();

}  // namespace gt
