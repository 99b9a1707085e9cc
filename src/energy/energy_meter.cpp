#include "src/energy/energy_meter.hpp"

#include <dirent.h>
#include <dlfcn.h>
#include <sched.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "src/core/error.hpp"

namespace gt {

namespace {

bool read_line(const std::string& path, std::string* out) {
  std::ifstream f(path);
  return bool(std::getline(f, *out));
}

long long read_number(const std::string& path) {
  std::string s;
  if (!read_line(path, &s)) throw Error("energy: cannot read " + path);
  try {
    return std::stoll(s);
  } catch (const std::exception&) {
    throw Error("energy: " + path + " does not hold a number ('" + s + "')");
  }
}

class NoMeter : public EnergyMeter {
 public:
  explicit NoMeter(std::string why) : why_(std::move(why)) {}
  std::optional<double> joules() override { return std::nullopt; }
  std::string source() const override { return "n/a (no counter: " + why_ + ")"; }

 private:
  std::string why_;
};

class RaplMeter : public EnergyMeter {
 public:
  RaplMeter(const std::string& dir, int share) : zone_(dir), share_(std::max(1, share)) { available_ = true; }
  std::optional<double> joules() override { return zone_.joules() / share_; }
  std::string source() const override {
    return "RAPL " + zone_.name() + (share_ > 1 ? " (1 of " + std::to_string(share_) + " ranks on it)" : "");
  }

 private:
  RaplZone zone_;
  int share_;
};

// The few NVML entry points used, resolved from the driver's library at run time. nvmlDevice_t is an opaque
// pointer and nvmlReturn_t an int (NVML_SUCCESS = 0) in nvml.h.
class NvmlMeter : public EnergyMeter {
 public:
  explicit NvmlMeter(const std::string& bus) : bus_(bus) {
    lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib_) {
      why_ = "libnvidia-ml.so.1 not found";
      return;
    }
    auto init = reinterpret_cast<int (*)()>(dlsym(lib_, "nvmlInit_v2"));
    auto handle = reinterpret_cast<int (*)(const char*, void**)>(dlsym(lib_, "nvmlDeviceGetHandleByPciBusId_v2"));
    energy_ = reinterpret_cast<int (*)(void*, unsigned long long*)>(dlsym(lib_, "nvmlDeviceGetTotalEnergyConsumption"));
    unsigned long long mj = 0;
    if (!init || !handle || !energy_ || init() != 0 || handle(bus_.c_str(), &dev_) != 0 || energy_(dev_, &mj) != 0) {
      why_ = "NVML has no energy counter for the GPU at " + bus_;
      return;
    }
    start_mj_ = mj;
    available_ = true;
  }
  ~NvmlMeter() override {
    if (lib_) dlclose(lib_);  // nvmlShutdown is left to process exit: other users may share the library
  }
  std::optional<double> joules() override {
    unsigned long long mj = 0;
    if (!available_ || energy_(dev_, &mj) != 0) return std::nullopt;
    return double(mj - start_mj_) * 1e-3;
  }
  std::string source() const override {
    return available_ ? "NVML total energy of the GPU at " + bus_ : "n/a (no counter: " + why_ + ")";
  }

 private:
  void* lib_ = nullptr;
  void* dev_ = nullptr;
  int (*energy_)(void*, unsigned long long*) = nullptr;
  unsigned long long start_mj_ = 0;
  std::string bus_, why_;
};

}  // namespace

RaplZone::RaplZone(std::string dir) : dir_(std::move(dir)) {
  if (!read_line(dir_ + "/name", &name_)) throw Error("energy: cannot read " + dir_ + "/name");
  range_uj_ = read_number(dir_ + "/max_energy_range_uj");
  if (range_uj_ <= 0) throw Error("energy: " + dir_ + "/max_energy_range_uj is not positive");
  last_uj_ = read_uj();
}

long long RaplZone::read_uj() const { return read_number(dir_ + "/energy_uj"); }

double RaplZone::joules() {
  const long long now = read_uj();
  long long d = now - last_uj_;
  if (d < 0) d += range_uj_;  // wrapped once since the last reading
  last_uj_ = now;
  total_j_ += double(d) * 1e-6;
  return total_j_;
}

std::vector<std::string> rapl_package_zones(const std::string& root) {
  std::vector<std::string> zones;
  DIR* d = opendir(root.c_str());
  if (!d) return zones;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    // top level: "intel-rapl:<N>" with no second colon ("intel-rapl:0:1" is a subzone of package 0)
    if (n.rfind("intel-rapl:", 0) != 0 || n.find(':', 11) != std::string::npos) continue;
    std::string name;
    if (read_line(root + "/" + n + "/name", &name) && name.rfind("package-", 0) == 0) zones.push_back(root + "/" + n);
  }
  closedir(d);
  std::sort(zones.begin(), zones.end());
  return zones;
}

std::unique_ptr<EnergyMeter> make_rapl_meter(const std::string& root, int package, int ranks_on_package) {
  const std::vector<std::string> zones = rapl_package_zones(root);
  if (zones.empty()) return make_no_meter("no RAPL package zone under " + root);
  const std::string want = "package-" + std::to_string(std::max(package, 0));
  for (const std::string& z : zones) {
    std::string name;
    read_line(z + "/name", &name);
    if (name != want) continue;
    try {
      return std::make_unique<RaplMeter>(z, ranks_on_package);
    } catch (const Error& e) {  // most often: energy_uj readable by root only
      return make_no_meter(e.what());
    }
  }
  return make_no_meter("no RAPL zone named " + want + " under " + root);
}

std::unique_ptr<EnergyMeter> make_nvml_meter(const std::string& pci_bus_id) {
  return std::make_unique<NvmlMeter>(pci_bus_id);
}

std::unique_ptr<EnergyMeter> make_no_meter(const std::string& why) { return std::make_unique<NoMeter>(why); }

int current_package(const std::string& cpu_root) {
  const int cpu = sched_getcpu();
  if (cpu < 0) return -1;
  std::string s;
  if (!read_line(cpu_root + "/cpu" + std::to_string(cpu) + "/topology/physical_package_id", &s)) return -1;
  try {
    return std::stoi(s);
  } catch (const std::exception&) {
    return -1;
  }
}

std::unique_ptr<EnergyMeter> make_run_meter(MPI_Comm world, const std::string& gpu_pci_bus_id,
                                            const std::string& powercap_root, const std::string& cpu_root) {
  if (!gpu_pci_bus_id.empty()) return make_nvml_meter(gpu_pci_bus_id);
  // Ranks of this node on the same package share its counter: count them (collective over the node).
  MPI_Comm node;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int n = 1;
  MPI_Comm_size(node, &n);
  const int mine = current_package(cpu_root);
  std::vector<int> all(size_t(n), -1);
  MPI_Allgather(&mine, 1, MPI_INT, all.data(), 1, MPI_INT, node);
  MPI_Comm_free(&node);
  if (mine < 0) return make_no_meter("this CPU's package is unknown (" + cpu_root + ")");
  return make_rapl_meter(powercap_root, mine, int(std::count(all.begin(), all.end(), mine)));
}

}  // namespace gt
