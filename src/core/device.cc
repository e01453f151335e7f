// The device registry: a fixed array filled once per device, so reading a device by id (every
// storage allocation and release does) takes no lock.
#include "device.h"

#include <atomic>
#include <mutex>

#include "error.h"

namespace mf {

namespace {

// The CPU's caching allocator, seen through the device interface.
class CpuAllocator final : public DeviceAllocator {
 public:
  void* allocate(size_t nbytes) override { return cpu_allocator().allocate(nbytes); }
  void free(void* p) override { cpu_allocator().free(p); }
  AllocatorStats stats() override { return cpu_allocator().stats(); }
  void empty_cache() override { cpu_allocator().empty_cache(); }
};

struct Registry {
  Device devices[kMaxDevices];
  std::atomic<int> count{0};
  std::mutex mu;  // serialises registration

  Registry() {
    static CpuAllocator cpu;
    devices[MF_CPU].id = MF_CPU;
    devices[MF_CPU].name = "cpu";
    devices[MF_CPU].allocator = &cpu;
    count.store(1, std::memory_order_release);
  }
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: storages may be released during static teardown
  return *r;
}

}  // namespace

int register_device(const std::string& name, DeviceAllocator* allocator, const mf_kernel_table* kernels, int strings) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (name.empty()) fail("register_device: the name is empty");
  if (!allocator) fail("register_device: ", name, ": the allocator is null");
  if (!kernels) fail("register_device: ", name, ": the kernel table is null");
  if (strings != MF_CPU && strings != MF_CUDA)
    fail("register_device: ", name, ": strings is ", strings, "; expected MF_CPU or MF_CUDA");
  int n = r.count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (r.devices[i].name == name) fail("register_device: a device named '", name, "' is already registered");
  if (n == kMaxDevices) fail("register_device: ", name, ": ", kMaxDevices, " devices are registered already");
  Device& d = r.devices[n];
  d.id = n;
  d.name = name;
  d.allocator = allocator;
  d.kernels = kernels;
  d.strings = strings;
  r.count.store(n + 1, std::memory_order_release);
  return n;
}

void set_device_kernels(int id, const mf_kernel_table* kernels) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  if (id < 0 || id >= r.count.load(std::memory_order_acquire)) fail("set_device_kernels: no device has id ", id);
  r.devices[id].kernels = kernels;
}

const Device& device(int id) {
  Registry& r = registry();
  if (id < 0 || id >= r.count.load(std::memory_order_acquire))
    fail("device: no device has id ", id, " (", r.count.load(), " registered)");
  return r.devices[id];
}

int find_device(const std::string& name) {
  Registry& r = registry();
  int n = r.count.load(std::memory_order_acquire);
  for (int i = 0; i < n; ++i)
    if (r.devices[i].name == name) return i;
  return -1;
}

int device_count() { return registry().count.load(std::memory_order_acquire); }

const mf_kernel_table& device_kernels(int id) {
  const Device& d = device(id);
  if (!d.kernels) fail("device ", d.name, ": no kernel table is attached");
  return *d.kernels;
}

}  // namespace mf
