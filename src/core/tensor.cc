// Tensor structs hold one storage reference when owns = 1; the last release returns the bytes
// to the allocator of the storage's device.
#include "tensor.h"

#include "device.h"
#include "error.h"

namespace mf {

static void storage_release(mf_storage* s) {
  if (!s) return;
  if (s->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    if (s->owned) device(s->device).allocator->free(s->ptr);
    delete s;
  }
}

void tensor_init(mf_tensor& t, int ndim, const int64_t* shape, int dtype, int device) {
  if (!dtype_valid(dtype)) fail("invalid dtype code ", dtype);
  DeviceAllocator* alloc = mf::device(device).allocator;  // throws naming an unknown id
  mf_tensor fresh{};
  set_meta(fresh, ndim, shape, dtype, device);
  int64_t n = fresh.count, es = dtype_size(dtype);
  if (n > (int64_t(1) << 62) / es)
    throw OutOfMemory("cannot allocate tensor " + shape_str(fresh) + " of " + dtype_name(dtype) +
                          ": out of memory; it needs more than " + std::to_string(int64_t(1) << 62) +
                          " bytes, more than can be addressed",
                      SIZE_MAX);
  auto* s = new mf_storage();
  s->nbytes = n * es;
  s->device = device;
  try {
    s->ptr = alloc->allocate(size_t(s->nbytes));
  } catch (const OutOfMemory& e) {  // the same error, naming the tensor as well as the bytes
    delete s;
    throw OutOfMemory("cannot allocate tensor " + shape_str(fresh) + " of " + dtype_name(dtype) + " (" +
                          std::to_string(n * es) + " bytes): out of memory; " + e.reason(),
                      e.bytes(), e.reason());
  } catch (...) {
    delete s;
    throw;
  }
  fresh.store = s;
  fresh.ptr = s->ptr;
  fresh.owns = 1;
  t = fresh;
}

void tensor_init(mf_tensor& t, const Shape& shape, int dtype, int device) {
  if (shape.size() > size_t(kMaxDims)) checked_numel(shape, "tensor");  // throws the dims error
  tensor_init(t, int(shape.size()), shape.data(), dtype, device);
}

void tensor_wrap(mf_tensor& t, void* data, const Shape& shape, int dtype) {
  if (!dtype_valid(dtype)) fail("invalid dtype code ", dtype);
  mf_tensor fresh{};
  set_meta(fresh, shape, dtype, MF_CPU);
  if (!data && fresh.count > 0) fail("wrap: data is null for a tensor of size ", shape_str(fresh));
  if (fresh.count > (int64_t(1) << 62) / dtype_size(dtype))
    fail("wrap: shape ", shape_str(fresh), " needs more bytes than can be addressed");
  auto* s = new mf_storage();
  s->ptr = data;
  s->nbytes = fresh.count * dtype_size(dtype);
  s->owned = false;
  fresh.store = s;
  fresh.ptr = data;
  fresh.owns = 1;
  t = fresh;
}

void tensor_share(mf_tensor& dst, const mf_tensor& src) {
  mf_tensor copy = src;
  if (copy.store) copy.store->refs.fetch_add(1, std::memory_order_relaxed);
  copy.owns = copy.store ? 1 : 0;
  dst = copy;
}

void tensor_release(mf_tensor& t) {
  if (t.owns) storage_release(t.store);
  t.store = nullptr;
  t.ptr = nullptr;
  t.owns = 0;
}

}  // namespace mf
