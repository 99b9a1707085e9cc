#pragma once
// Orphaned ranks: when an MPI launcher's per-node proxy is killed, its ranks used to keep training at full CPU
// (and the launcher never returned). Under a launcher, a rank now dies with its parent.
namespace gt {

// When the process runs under an MPI launcher (PMI_RANK / PMIX_RANK / OMPI_COMM_WORLD_RANK set): asks the kernel
// to kill it when its parent (the launcher's proxy) dies, and exits at once if that already happened. A run
// started from a shell is left alone, so `nohup gridtrain ... &` survives a closed terminal.
void die_with_launcher();

}  // namespace gt
