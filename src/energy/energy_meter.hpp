#pragma once
// Energy a rank's device used, from the hardware's own counters, for joules per step, per token and per image:
//   - CPUs: RAPL package energy through the Linux powercap tree (<root>/intel-rapl:N/energy_uj, the top-level
//     "package-N" zones; AMD Zen exposes the same tree). The counter wraps at max_energy_range_uj: each reading adds
//     the difference to the last one, plus the range when it went down, so readings must come more often than one
//     wrap (minutes at full power). Ranks that share a package share its energy: each reports its share (package
//     energy / ranks on that package, agreed over the node), so a sum over ranks counts every package once.
//   - NVIDIA GPUs: NVML's total energy since the driver loaded (nvmlDeviceGetTotalEnergyConsumption, mJ), loaded at
//     run time from the driver's libnvidia-ml.so.1: no build dependency, and a machine without it just has no counter.
// Where no counter can be read (this VM has no powercap tree; energy_uj is root-only on most kernels since 2020)
// the meter says so and reads nothing: an estimate is never shown as a measurement.
#include <mpi.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gt {

class EnergyMeter {
 public:
  virtual ~EnergyMeter() = default;
  // Joules of this rank's share since the meter was made; nullopt when there is no counter.
  virtual std::optional<double> joules() = 0;
  // What is read, e.g. "RAPL package-0 (1 of 2 ranks)", or "n/a (no counter: <why>)".
  virtual std::string source() const = 0;
  bool available() const { return available_; }

 protected:
  bool available_ = false;
};

// One package's RAPL zone: reads energy_uj as a running total across wrap-arounds.
class RaplZone {
 public:
  // dir: a zone directory (.../intel-rapl:0). Throws gt::Error when its files cannot be read.
  explicit RaplZone(std::string dir);
  const std::string& name() const { return name_; }
  // Joules since construction (or the last reset), adding the counter's range at each wrap.
  double joules();

 private:
  long long read_uj() const;
  std::string dir_, name_;
  long long range_uj_ = 0, last_uj_ = 0;
  double total_j_ = 0;
};

// The top-level package zones under a powercap root ("package-*" names), sorted by name; subzones (core, dram,
// uncore: intel-rapl:0:0 ...) are parts of a package and are not added again.
std::vector<std::string> rapl_package_zones(const std::string& powercap_root);

// The RAPL meter of the package this process runs on (its current CPU's physical_package_id under cpu_root),
// sharing it with `ranks_on_package` ranks. powercap_root and cpu_root are /sys/class/powercap and
// /sys/devices/system/cpu on a real machine; tests pass a fake tree.
std::unique_ptr<EnergyMeter> make_rapl_meter(const std::string& powercap_root, int package, int ranks_on_package);
// The NVML meter of the GPU at `pci_bus_id` (cudaDeviceGetPCIBusId's form: NVML and CUDA number devices
// differently); n/a without the driver's library or without an energy counter on that GPU.
std::unique_ptr<EnergyMeter> make_nvml_meter(const std::string& pci_bus_id);
// A meter that reads nothing and says why.
std::unique_ptr<EnergyMeter> make_no_meter(const std::string& why);

// The physical package of the CPU this process runs on now (sched_getcpu), -1 if unknown.
int current_package(const std::string& cpu_root = "/sys/devices/system/cpu");

// Collective over `world`: this rank's meter. On a GPU build (gpu_pci_bus_id not empty) NVML's counter of that
// GPU; otherwise the RAPL zone of the package this rank runs on, shared by the ranks of the node on that package.
std::unique_ptr<EnergyMeter> make_run_meter(MPI_Comm world, const std::string& gpu_pci_bus_id,
                                            const std::string& powercap_root = "/sys/class/powercap",
                                            const std::string& cpu_root = "/sys/devices/system/cpu");

}  // namespace gt
