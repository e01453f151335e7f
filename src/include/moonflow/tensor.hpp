// mf::Tensor: a handle to moonflow tensor storage for C++ hosts. It owns memory from moonflow's
// allocator, or is a zero-copy view of memory the host keeps alive; either way Lua sees the same bytes.
#pragma once
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include "error.hpp"

struct mf_tensor;  // the C ABI struct (src/core/types.h): shape, strides, data pointer, storage reference

namespace mf {

using Shape = std::vector<int64_t>;

// Element types; the codes are the C ABI's (MF_FLOAT32 ... in src/core/types.h; the library checks
// at compile time that they agree).
enum class DType : int32_t { kFloat32 = 0, kFloat64 = 1, kInt32 = 2, kInt64 = 3, kUInt8 = 4 };

// "float32", "float64", "int32", "int64", "uint8".
const char* dtype_name(DType dtype) noexcept;

// dtype_of<T>::value: the DType of the C++ element type T (float, double, int32_t, int64_t, uint8_t).
template <typename T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::kFloat32; };
template <> struct dtype_of<double> { static constexpr DType value = DType::kFloat64; };
template <> struct dtype_of<int32_t> { static constexpr DType value = DType::kInt32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::kInt64; };
template <> struct dtype_of<uint8_t> { static constexpr DType value = DType::kUInt8; };

// A strided tensor on the CPU. Copies are shallow: they share the storage (an atomic refcount), as
// Lua tensors do; clone() copies the data. Handles may be copied and destroyed on any thread; reading
// and writing the elements is the caller's to synchronise. Outlives the Engine it came from.
class Tensor {
 public:
  // An undefined tensor: no storage, defined() is false; only assignment and destruction are useful.
  Tensor() noexcept = default;
  // A new contiguous tensor from moonflow's allocator, zero-filled. Throws mf::Error (bad shape, memory).
  static Tensor zeros(const Shape& shape, DType dtype = DType::kFloat32);
  // Like zeros, but the elements are uninitialised.
  static Tensor empty(const Shape& shape, DType dtype = DType::kFloat32);
  // A new contiguous tensor holding a copy of numel(shape) elements read from data.
  template <typename T>
  static Tensor copy_of(const T* data, const Shape& shape) {
    return copy_of(static_cast<const void*>(data), shape, dtype_of<std::remove_cv_t<T>>::value);
  }
  static Tensor copy_of(const void* data, const Shape& shape, DType dtype);
  // A zero-copy, contiguous view of host memory; the dtype follows T. The caller keeps data alive and
  // unmoved while any handle to it lives, Lua ones included (a script that stores the tensor in a
  // global keeps it past the call). Lua may write through it. Throws mf::Error for a bad shape.
  template <typename T>
  static Tensor view(T* data, const Shape& shape) {
    static_assert(!std::is_const<T>::value, "mf::Tensor::view needs writable memory (Lua may write to it)");
    return view(static_cast<void*>(data), shape, dtype_of<T>::value);
  }
  static Tensor view(void* data, const Shape& shape, DType dtype);
  // As view(data, shape), checked against the buffer's length: throws mf::Error unless the shape
  // needs at most capacity elements (data.size() for a vector). Prefer these when the length is known.
  template <typename T>
  static Tensor view(T* data, int64_t capacity, const Shape& shape) {
    static_assert(!std::is_const<T>::value, "mf::Tensor::view needs writable memory (Lua may write to it)");
    return view(static_cast<void*>(data), capacity, shape, dtype_of<T>::value);
  }
  template <typename T>
  static Tensor view(std::vector<T>& data, const Shape& shape) {
    return view(data.data(), static_cast<int64_t>(data.size()), shape);
  }
  static Tensor view(void* data, int64_t capacity, const Shape& shape, DType dtype);
  // A new handle sharing t's storage (refcount + 1); t stays the caller's. Throws for a null t.
  static Tensor from_handle(const mf_tensor* t);

  Tensor(const Tensor& other);  // shares the storage
  Tensor(Tensor&& other) noexcept;
  Tensor& operator=(const Tensor& other);
  Tensor& operator=(Tensor&& other) noexcept;
  ~Tensor();

  bool defined() const noexcept { return t_ != nullptr; }
  // Shape queries on an undefined tensor throw mf::Error; indices here are 0-based, as C++ counts.
  int dim() const;
  Shape shape() const;
  int64_t size(int d) const;
  Shape strides() const;  // in elements
  int64_t numel() const;
  DType dtype() const;
  bool is_contiguous() const;
  // True when the bytes are host memory given to view() (or a view of such a tensor).
  bool is_host_view() const;
  // The first element as T*, for contiguous or strided access with strides(). Throws mf::Error when T
  // is not the tensor's dtype or the tensor is undefined.
  template <typename T>
  T* data() const {
    return static_cast<T*>(data_checked(dtype_of<std::remove_cv_t<T>>::value));
  }
  // This tensor when contiguous, else a contiguous copy.
  Tensor contiguous() const;
  // A contiguous copy with storage of its own.
  Tensor clone() const;
  // The elements in row-major order, converted to T.
  template <typename T>
  std::vector<T> to_vector() const {
    Tensor c = cast_contiguous(dtype_of<T>::value);
    const T* p = c.data<T>();
    return std::vector<T>(p, p + c.numel());
  }
  // The C ABI struct (owned by this handle; valid while it lives). For hosts that call the C ABI.
  const mf_tensor* handle() const noexcept { return t_; }
  // "[float32 tensor of size 2x3]".
  std::string str() const;

 private:
  void* data_checked(DType want) const;
  Tensor cast_contiguous(DType dtype) const;
  const mf_tensor& checked() const;
  mf_tensor* t_ = nullptr;  // heap struct holding one storage reference (owns = 1)
};

// Bytes and counts of moonflow's process-wide CPU allocator (shared by every engine).
struct MemoryStats {
  int64_t in_use = 0;              // bytes in live tensors
  int64_t peak = 0;                // high-water mark of in_use
  int64_t cached = 0;              // bytes held from the system, in use or free for reuse
  int64_t allocations = 0;
  int64_t system_allocations = 0;
  int64_t live_blocks = 0;
};
// Thread safe.
MemoryStats memory_stats();

}  // namespace mf
