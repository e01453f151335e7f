// The device registry: every place a tensor's bytes can live. A device has a name ("cpu"), an id
// (its index, the mf_tensor's device_id), the allocator that allocates and frees every storage on
// it, and its kernel table (src/core/kernel_table.h), which kernel strings reach as K and core code
// calls for copies. The CPU is device 0 (MF_CPU) from the start; its kernel table is attached by
// its backend when the library loads. A backend (or a test) adds a device with register_device.
#pragma once
#include <cstddef>
#include <string>

#include "allocator.h"
#include "kernel_table.h"

namespace mf {

// What a device's storage comes from. Thread safe; allocate throws mf::Error when it cannot serve.
class DeviceAllocator {
 public:
  virtual ~DeviceAllocator() = default;
  // nbytes of memory for one storage (nullptr for 0 bytes).
  virtual void* allocate(size_t nbytes) = 0;
  // Returns memory from allocate(); nullptr is ignored.
  virtual void free(void* p) = 0;
  virtual AllocatorStats stats() = 0;
  // Gives cached memory back to the system (a no-op for allocators that cache nothing).
  virtual void empty_cache() = 0;
};

struct Device {
  int id = -1;
  std::string name;
  DeviceAllocator* allocator = nullptr;     // never null; outlives the process's storages
  const mf_kernel_table* kernels = nullptr;  // null until its backend attaches it
  // The lua_compute slot its kernel strings come from (MF_CPU: the CPU strings, which a device
  // whose table runs host-addressable memory may share).
  int strings = MF_CPU;
};

constexpr int kMaxDevices = 16;

// Adds a device and returns its id. Throws when the name is empty or taken, the allocator or the
// table is null, or kMaxDevices are registered. Devices are never removed: allocator and table
// must live as long as the process. Thread safe.
int register_device(const std::string& name, DeviceAllocator* allocator, const mf_kernel_table* kernels,
                    int strings = MF_CPU);
// Attaches the kernel table of a registered device (the CPU backend does this for device 0).
void set_device_kernels(int id, const mf_kernel_table* kernels);
// The device with this id; throws mf::Error naming the id when none is registered. Lock free.
const Device& device(int id);
// The id of the device named name, or -1.
int find_device(const std::string& name);
int device_count();
// device(id)'s kernel table; throws naming the device when it has none.
const mf_kernel_table& device_kernels(int id);

}  // namespace mf
