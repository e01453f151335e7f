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
