#pragma once
// HostMirror: the host side of a flat device buffer, for the code that reads or writes training state on the host
// (checkpoint save and load, gather_params). Kokkos' mirror pattern:
//   - CPU builds: device memory is host memory, so the mirror is the buffer itself (no allocation, no copy;
//     pull() and push() only fence);
//   - GPU builds: a host allocation of the same size; pull() copies device -> host, push() host -> device.
// Mode::Copy allocates a separate host copy on any build, so the CPU tests run the copy path a GPU build takes
// (the test hook test_hooks::host_mirror_copy(), src/core/test_hooks.hpp, read by the trainer).
#include <cstddef>
#include <cstdlib>
#include <cstring>

#include "kernels/kokkos_compat.hpp"
#include "src/core/test_hooks.hpp"

namespace gt {

enum class MirrorMode { Auto, Copy };

// Test hook test_hooks::host_mirror_copy() (src/core/test_hooks.hpp): every host mirror of the trainer is a
// separate copy.
inline MirrorMode host_mirror_mode_from_env() {
  return test_hooks::host_mirror_copy() ? MirrorMode::Copy : MirrorMode::Auto;
}

template <class T>
class HostMirror {
 public:
  using DeviceT = DeviceView<T>;
  using HostT = typename DeviceT::HostMirror;

  // device: n elements in the default memory space (not owned; must outlive the mirror).
  HostMirror(T* device, size_t n, MirrorMode mode = MirrorMode::Auto)
      : device_(device, n),
        host_(mode == MirrorMode::Copy ? Kokkos::create_mirror(device_) : Kokkos::create_mirror_view(device_)) {}

  T* data() const { return host_.data(); }
  size_t size() const { return host_.extent(0); }
  // True when the mirror is the device buffer itself (CPU builds, Mode::Auto).
  bool aliases() const { return host_.data() == device_.data(); }

  // Device -> host, after every kernel queued before (deep_copy fences; on an alias it only fences).
  void pull() {
    Kokkos::fence();
    Kokkos::deep_copy(host_, device_);
  }
  // Host -> device.
  void push() {
    Kokkos::deep_copy(device_, host_);
    Kokkos::fence();
  }

 private:
  DeviceT device_;
  HostT host_;
};

}  // namespace gt
