// Faults found on the device and raised at the next host synchronisation (fault.cuh says how). The
// messages are the CPU's words for the same faults (src/kernels/cpu/gather.cc, scatter.cc, one_hot,
// src/lua/capi_graph.cc for adam's step, pointwise.h's functor faults), followed by where the fault
// was found.
#include <cstdio>
#include <mutex>
#include <string>
#include <vector>

#include "../../core/shape.h"
#include "fault.cuh"

namespace mf {
namespace cuda {

namespace {

std::once_flag g_fault_once;
Fault* g_host = nullptr;  // the record as the host addresses it
FaultSlot g_slot{};
std::mutex g_scan_mu;   // scan_lock()
std::mutex g_raise_mu;  // one host thread reads and clears the record at a time

__global__ void scan_kernel(FaultSlot s, Layout l, int dtype, const void* idx, long long count, long long n) {
  for (long long i = global_index(); i < count; i += global_step()) {
    long long v = index_at(idx, dtype, offset_of(l, i));
    if (v < 1 || v > n) note_bad(s, i);
  }
}

__global__ void report_kernel(FaultSlot s, FaultInfo info, const void* idx) {
  unsigned long long pos = *s.scan;
  if (pos == ~0ull) return;
  *s.scan = ~0ull;  // ready for the next check
  long long value = idx ? index_at(idx, info.index_dtype, offset_of(info.index, (long long)pos)) : 0;
  record_fault(s, info, value, (long long)pos, 0);
}

// "[2,1]": 1-based coordinates of element i of shape l
std::string coordinates(const Layout& l, long long i) {
  std::string s;
  for (int d = l.ndim - 1; d >= 0; --d) {
    s = std::to_string(i % l.shape[d] + 1) + (s.empty() ? "" : ",") + s;
    i /= l.shape[d];
  }
  return "[" + s + "]";
}

std::string shape_text(int ndim, const long long* shape) {
  return shape_str(Shape(shape, shape + ndim));
}

std::string message(const Fault& f) {
  const FaultInfo& i = f.info;
  std::string m;
  if (i.kind == kFaultMessage) {
    m = std::string(i.op) + ": " + i.what;
  } else if (i.kind == kFaultAdamStep) {
    char t[32];
    std::snprintf(t, sizeof t, "%g", f.number);  // as the CPU's message
    m = std::string(i.op) + ": step is " + t + "; expected t >= 1 (count the step first)";
  } else if (i.flat) {
    m = std::string(i.op) + ": " + i.what + " " + std::to_string(f.value) + " at position " +
        std::to_string(f.pos + 1) + " is out of range 1.." + std::to_string(i.n);
  } else {
    m = std::string(i.op) + ": " + i.what + " " + std::to_string(f.value) + " at position " +
        coordinates(i.index, f.pos) + " of the index is out of range 1.." + std::to_string(i.n) + " along dim " +
        std::to_string(i.dim + 1) + " of x (" + shape_text(i.xndim, i.xshape) + ")";
  }
  return m + " (found on the device by an earlier " + i.op + "; raised at the next host read)";
}

}  // namespace

FaultSlot fault_slot() {
  // a step that fails gives back what the earlier ones took (call_once runs the lambda again on the
  // next call), so a failed creation leaks no pinned memory
  std::call_once(g_fault_once, [] {
    cudaStream_t st = stream();  // may throw: before anything is taken
    void* h = nullptr;
    check(cudaHostAlloc(&h, sizeof(Fault), cudaHostAllocMapped), "fault_slot", "cudaHostAlloc");
    static_cast<Fault*>(h)->set = 0;
    void *d = nullptr, *scan = nullptr;
    const char* call = "cudaHostGetDevicePointer";
    cudaError_t e = cudaHostGetDevicePointer(&d, h, 0);
    if (e == cudaSuccess) {
      call = "cudaMalloc";
      e = cudaMalloc(&scan, sizeof(unsigned long long));
    }
    if (e == cudaSuccess) {
      call = "cudaMemsetAsync";
      e = cudaMemsetAsync(scan, 0xff, sizeof(unsigned long long), st);
    }
    if (e != cudaSuccess) {
      if (scan) (void)cudaFree(scan);
      (void)cudaFreeHost(h);
      throw_cuda("fault_slot", call, e);
    }
    g_host = static_cast<Fault*>(h);
    g_slot = FaultSlot{static_cast<Fault*>(d), static_cast<unsigned long long*>(scan)};
  });
  if (!g_slot.rec) fail("K.fault_slot: the device fault record could not be created earlier");
  return g_slot;
}

FaultInfo index_fault(const char* op, const char* what, const mf_tensor& idx, long long n, int dim, bool flat,
                      const mf_tensor* x) {
  FaultInfo f{};
  f.op = op;
  f.what = what;
  f.kind = kFaultIndex;
  f.flat = flat ? 1 : 0;
  f.dim = dim;
  f.n = n;
  f.index = layout_of(idx);
  f.index_dtype = idx.dtype_id;
  if (x) {
    f.xndim = x->ndim;
    for (int d = 0; d < x->ndim; ++d) f.xshape[d] = x->shape[d];
  }
  return f;
}

void report_bad(const FaultSlot& s, const FaultInfo& info, const void* idx) {
  report_kernel<<<1, 1, 0, stream()>>>(s, info, idx);
  check_launch(info.op);
}

std::unique_lock<std::mutex> scan_lock() { return std::unique_lock<std::mutex>(g_scan_mu); }

void check_indices(const FaultInfo& info, const mf_tensor& idx) {
  if (idx.count == 0) return;
  FaultSlot s = fault_slot();
  std::unique_lock<std::mutex> lock = scan_lock();
  scan_kernel<<<grid_for(idx.count), kThreads, 0, stream()>>>(s, info.index, info.index_dtype, idx.ptr, idx.count,
                                                               info.n);
  check_launch(info.op);
  report_bad(s, info, idx.ptr);
}

// After a stream synchronisation (synchronize()): the recorded fault, raised once.
void raise_fault() {
  if (!g_host) return;
  std::lock_guard<std::mutex> lock(g_raise_mu);
  if (!g_host->set) return;
  std::string m = message(*g_host);
  g_host->set = 0;
  throw Error(m);
}

}  // namespace cuda
}  // namespace mf
