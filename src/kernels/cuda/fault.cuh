// Faults found on the device (issue 16 item 5: a training step does no host synchronisation). A kernel
// that finds a bad operand value (an index out of range, adam's step count below 1, an integer
// division by zero) cannot stop the host, and a check that copied the value back would make the
// host wait. So the kernel records the
// fault in one record in host-mapped pinned memory, writes nothing it cannot write safely (bad
// indices are skipped), and the next synchronising host read (copy_to_host, mf.cuda.synchronize;
// every wait goes through synchronize()) raises it as an error naming the op, the bad value, where it
// was and the valid range, as PyTorch's device-side asserts do, but recoverable: the record is
// cleared when raised. Only the first fault is kept until then (later ones usually follow from it).
//
// Index checks (check_indices) run in two steps on the stream: a scan kernel calls note_bad(slot,
// position) for each bad element (the smallest position wins), then report_bad() queues one thread
// that records that position and its value and resets the scan word. Message texts: fault.cu (the
// CPU's words).
#pragma once
#include <mutex>

#include "layout.cuh"

namespace mf {
namespace cuda {

enum FaultKind { kFaultIndex = 1, kFaultAdamStep = 2, kFaultMessage = 3 };  // message: "op: what"

// What the message needs beyond the value and position: filled on the host at launch, by value.
struct FaultInfo {
  const char* op;    // the routine's name: a host string literal, never read on the device
  const char* what;  // "index" or "label"
  int kind;
  int flat;          // the position counted from 1 (gather.cc's words), else coordinates in the index
  int dim;           // the dim of x the index runs along (0-based; for the coordinates form)
  long long n;       // the valid range is 1..n
  Layout index;      // the index's shape and strides: its value is read through them
  int index_dtype;
  int xndim;
  long long xshape[MF_MAX_DIMS];
};

// The record, in host-mapped pinned memory: one device thread writes it, the host reads it after a
// stream synchronisation.
struct Fault {
  volatile int set;
  FaultInfo info;
  long long value, pos;
  double number;
};

struct FaultSlot {
  Fault* rec;               // the record, as the device addresses it
  unsigned long long* scan; // device word: the smallest bad position of the check in flight (~0: none)
};

// The process's slot, created on first use (host).
FaultSlot fault_slot();

// A FaultInfo for an index check of idx against 1..n (host).
FaultInfo index_fault(const char* op, const char* what, const mf_tensor& idx, long long n, int dim, bool flat,
                      const mf_tensor* x);

// Queues the report of the smallest position note_bad saw since the last report (host); idx null: no
// value to read (kFaultMessage).
void report_bad(const FaultSlot& s, const FaultInfo& info, const void* idx);

// Queues the check of every value of idx (int64, int32 or uint8) against 1..info.n and its report:
// the usual way to check indices (host; no wait).
void check_indices(const FaultInfo& info, const mf_tensor& idx);

// Held from the launch of a kernel that calls note_bad through the launch of its report_bad (host):
// engines on other threads queue on the same stream and share the scan word, so no other check's
// kernels may come between a scan and its report (the report would take the other's position, or read
// its own index at it, past its end). check_indices takes it; a caller of note_bad and report_bad
// takes it itself.
std::unique_lock<std::mutex> scan_lock();

__device__ __forceinline__ void note_bad(const FaultSlot& s, long long pos) {
  atomicMin(s.scan, (unsigned long long)pos);
}

// Records a fault unless one is pending; called by one thread.
__device__ __forceinline__ void record_fault(const FaultSlot& s, const FaultInfo& info, long long value, long long pos,
                                             double number) {
  Fault* f = s.rec;
  if (f->set) return;
  f->info = info;
  f->value = value;
  f->pos = pos;
  f->number = number;
  __threadfence_system();
  f->set = 1;
}

// An index's value as int64 (int64, int32 or uint8 storage).
__device__ __forceinline__ long long index_at(const void* p, int dtype, long long off) {
  if (dtype == MF_INT64) return static_cast<const long long*>(p)[off];
  if (dtype == MF_INT32) return static_cast<const int*>(p)[off];
  return static_cast<const unsigned char*>(p)[off];
}

}  // namespace cuda
}  // namespace mf
