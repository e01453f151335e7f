// mf::Tensor, the public C++ handle: a heap mf_tensor holding one storage reference, so a handle
// and a Lua tensor can share the same bytes (src/include/moonflow/tensor.hpp states the contract).
#include <moonflow/tensor.hpp>

#include <cstring>

#include "allocator.h"
#include "device.h"
#include "error.h"
#include "tensor.h"
#include "writes.h"

namespace mf {

namespace {

// The public header spells the dtype codes out (it is installed without the C types header);
// these hold them to src/core/types.h.
static_assert(int(DType::kFloat32) == MF_FLOAT32 && int(DType::kFloat64) == MF_FLOAT64 &&
                  int(DType::kInt32) == MF_INT32 && int(DType::kInt64) == MF_INT64 &&
                  int(DType::kUInt8) == MF_UINT8 && MF_DTYPE_COUNT == 5,
              "mf::DType (src/include/moonflow/tensor.hpp) must list the codes of src/core/types.h");

int dtype_code(DType d) {
  int c = static_cast<int>(d);
  if (!dtype_valid(c)) fail("tensor: invalid dtype code ", c);
  return c;
}

// Takes over a filled struct (its reference included) into a new handle.
Tensor adopt(const mf_tensor& filled) {
  mf_tensor tmp = filled;
  Tensor out = Tensor::from_handle(&tmp);  // refcount + 1 ...
  tensor_release(tmp);                     // ... and - 1: the handle now holds the only new reference
  return out;
}

// A new tensor on t's device with t's shape and the given dtype, holding t's values (converted),
// copied by the kernel table of that device.
Tensor device_copy(const mf_tensor& t, int dtype) {
  mf_tensor o{};
  tensor_init(o, shape_of(t), dtype, t.device_id);
  Tensor out = adopt(o);
  if (t.count && device_kernels(t.device_id).copy(const_cast<mf_tensor*>(out.handle()), &t) != MF_OK) fail(last_error());
  return out;
}

}  // namespace

const char* dtype_name(DType dtype) noexcept { return dtype_name(static_cast<int>(dtype)); }

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  mf_tensor t{};
  tensor_init(t, shape, dtype_code(dtype), MF_CPU);
  return adopt(t);
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) {
  mf_tensor t{};
  tensor_init(t, shape, dtype_code(dtype), MF_CPU);
  if (t.count) std::memset(t.ptr, 0, size_t(tensor_nbytes(t)));
  return adopt(t);
}

Tensor Tensor::copy_of(const void* data, const Shape& shape, DType dtype) {
  Tensor out = empty(shape, dtype);
  if (out.numel()) {
    if (!data) fail("Tensor::copy_of: data is null");
    std::memcpy(out.t_->ptr, data, size_t(tensor_nbytes(*out.t_)));
  }
  return out;
}

Tensor Tensor::view(void* data, const Shape& shape, DType dtype) {
  mf_tensor t{};
  int code = dtype_code(dtype);
  if (!data && checked_numel(shape, "Tensor::view") > 0) fail("Tensor::view: data is null");
  tensor_wrap(t, data, shape, code);
  return adopt(t);
}

Tensor Tensor::view(void* data, int64_t capacity, const Shape& shape, DType dtype) {
  int64_t n = checked_numel(shape, "Tensor::view");
  if (capacity < 0 || n > capacity)
    fail("Tensor::view: shape ", shape_str(shape), " needs ", n, " elements but the buffer holds ", capacity);
  return view(data, shape, dtype);
}

Tensor Tensor::from_handle(const mf_tensor* t) {
  if (!t) fail("Tensor::from_handle: null tensor");
  if (!t->store && t->count > 0) fail("Tensor::from_handle: the tensor has no storage to share");
  check_in_storage(*t, "Tensor::from_handle", "tensor");  // a hand-made struct must describe real bytes
  Tensor out;
  out.t_ = new mf_tensor{};
  tensor_share(*out.t_, *t);
  return out;
}

Tensor::Tensor(const Tensor& other) {
  if (other.t_) {
    t_ = new mf_tensor{};
    tensor_share(*t_, *other.t_);
  }
}

Tensor::Tensor(Tensor&& other) noexcept : t_(other.t_) { other.t_ = nullptr; }

Tensor& Tensor::operator=(const Tensor& other) {
  if (this != &other) *this = Tensor(other);
  return *this;
}

Tensor& Tensor::operator=(Tensor&& other) noexcept {
  if (this != &other) {
    Tensor old(std::move(*this));  // released on return
    t_ = other.t_;
    other.t_ = nullptr;
  }
  return *this;
}

Tensor::~Tensor() {
  if (t_) {
    tensor_release(*t_);
    delete t_;
    t_ = nullptr;
  }
}

const mf_tensor& Tensor::checked() const {
  if (!t_) fail("tensor: the tensor is undefined (default-constructed or moved from)");
  return *t_;
}

int Tensor::dim() const { return checked().ndim; }
Shape Tensor::shape() const { return shape_of(checked()); }
int64_t Tensor::size(int d) const {
  const mf_tensor& t = checked();
  if (d < 0 || d >= t.ndim) fail("tensor: dim ", d, " out of range for a ", t.ndim, "-dim tensor (0-based in C++)");
  return t.shape[d];
}
Shape Tensor::strides() const {
  const mf_tensor& t = checked();
  return Shape(t.strides, t.strides + t.ndim);
}
int64_t Tensor::numel() const { return checked().count; }
DType Tensor::dtype() const { return static_cast<DType>(checked().dtype_id); }
bool Tensor::is_contiguous() const { return checked().is_contig != 0; }
bool Tensor::is_host_view() const { return checked().store && !checked().store->owned; }

void* Tensor::data_checked(DType want) const {
  const mf_tensor& t = checked();
  if (t.dtype_id != static_cast<int>(want))
    fail("tensor: data<", dtype_name(want), ">() on a ", dtype_name(t.dtype_id), " tensor of size ", shape_str(t));
  return t.ptr;
}

Tensor Tensor::clone() const {
  const mf_tensor& t = checked();
  return device_copy(t, t.dtype_id);
}

Tensor Tensor::contiguous() const { return is_contiguous() ? *this : clone(); }

Tensor Tensor::cast_contiguous(DType dtype) const {
  const mf_tensor& t = checked();
  if (t.is_contig && t.dtype_id == static_cast<int>(dtype)) return *this;
  return device_copy(t, dtype_code(dtype));
}

std::string Tensor::str() const {
  if (!t_) return "[undefined tensor]";
  return std::string("[") + dtype_name(t_->dtype_id) + " tensor of size " + shape_str(*t_) + "]";
}

MemoryStats memory_stats() {
  AllocatorStats s = cpu_allocator().stats();
  MemoryStats m;
  m.in_use = s.in_use;
  m.peak = s.peak;
  m.cached = s.cached;
  m.allocations = s.allocations;
  m.system_allocations = s.system_allocations;
  m.live_blocks = s.live_blocks;
  return m;
}

}  // namespace mf
