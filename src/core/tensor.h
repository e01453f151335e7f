// Storage (refcounted bytes on a device) and the lifetime of the references mf_tensor structs hold.
#pragma once
#include <atomic>
#include <cstdint>

#include "dtype.h"
#include "shape.h"

struct mf_storage {
  std::atomic<int> refs{1};
  void* ptr = nullptr;
  int64_t nbytes = 0;
  int32_t device = MF_CPU;
  bool owned = true;  // false: wraps caller memory (mf_tensor_wrap); never freed by us
  // Writes so far (eager write ops, element writes, graph sessions, every engine): the eager tape
  // (lua/moonflow/tape.lua) compares it with the count it saw when it recorded a tensor of this storage.
  // last_writer: the op index of the last write, or a negative code the tape names (mf_storage_bump).
  std::atomic<int64_t> version{0};
  std::atomic<int32_t> last_writer{-1};
};

namespace mf {

// Makes t a new contiguous tensor with fresh (uninitialised) storage from the device's allocator.
void tensor_init(mf_tensor& t, const Shape& shape, int dtype, int device);
void tensor_init(mf_tensor& t, int ndim, const int64_t* shape, int dtype, int device);
// Makes t a tensor over memory the caller owns and keeps alive.
void tensor_wrap(mf_tensor& t, void* data, const Shape& shape, int dtype);
// Makes dst an owning copy of src's view (storage refcount + 1).
void tensor_share(mf_tensor& dst, const mf_tensor& src);
// Drops t's storage reference if it owns one; t becomes empty.
void tensor_release(mf_tensor& t);
inline int64_t tensor_nbytes(const mf_tensor& t) { return t.count * dtype_size(t.dtype_id); }

}  // namespace mf
