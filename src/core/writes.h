// The write rule (PyTorch's) for every routine that writes into existing storage: the source
// broadcasts to the destination, the destination has no overlapping elements, numbers fit the dtype.
#pragma once
#include <cstdint>

#include "shape.h"

namespace mf {

// Throws "<what>: <name> ..." unless t's metadata is self-consistent: 0..8 dims, count equal to the
// product of the sizes, a valid dtype, data for a non-empty tensor, extents that fit in int64.
void check_meta(const mf_tensor& t, const char* what, const char* name);

// Throws unless src's shape broadcasts to dst's (dims align from the last; each source size equals
// the destination's or is 1; the source has no more dims than the destination):
// "copy: source 100x100 does not broadcast to destination 2 (...)".
void check_broadcast(const mf_tensor& src, const mf_tensor& dst, const char* what);

// Dim (0-based) of the first overlap found in t: a stride-0 dim of size > 1 (as expand makes), or
// some two index tuples addressing one element (an as_strided view); -1 when none, -2 when the
// overlap is not along a single zero-stride dim.
int internal_overlap(const mf_tensor& t);

// Throws when t has overlapping elements, naming it:
// "fill: tensor is an expanded view (stride 0 along dim 2); it cannot be written in place".
void check_writable(const mf_tensor& t, const char* what, const char* name);

// Throws unless every element t addresses lies inside its storage (when it has one).
void check_in_storage(const mf_tensor& t, const char* what, const char* name);

// True when the bytes a and b address intersect (same storage or not).
bool memory_overlaps(const mf_tensor& a, const mf_tensor& b);

// True when every element of dst reads the element of src (broadcast to dst) at its own address: a
// copy onto itself, whose overlapping memory needs no staging.
bool reads_own_position(const mf_tensor& dst, const mf_tensor& src);

// Throws "<what>: value 300 does not fit uint8 (0..255)" when v cannot be stored in an integer
// dtype (NaN and infinities included); fractions truncate toward zero, as PyTorch converts.
// Every value fits a float dtype.
void check_value_fits(double v, int dtype, const char* what);

}  // namespace mf
