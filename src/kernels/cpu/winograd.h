// -- winograd ----------------------------------------------------------------------------------------
// conv2d of a 3x3 kernel at stride 1 and dilation 1 by Winograd's minimal filtering F(m x m, 3 x 3)
// (conv.cc chooses it where it wins; winograd.cc says how it works). Also conv2d_backward_input of
// such a layer: the same convolution of gy with the flipped, transposed weights.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mf {

struct WinoConv {
  int64_t N, Ci, H, W;  // the input x: N x Ci x H x W
  int64_t Co, Ho, Wo;   // the output y: N x Co x Ho x Wo
  int64_t ph, pw;       // output (0, 0) reads x from (-ph, -pw); negative: rows / columns cropped
  bool flip;            // w is Ci x Co x 3 x 3 read flipped (backward input); else Co x Ci x 3 x 3
  int m;                // output tile side: 2 or 4
  // the plan (wino_plan fills it from the fields above only: never from the thread count, so
  // every output element is the same sum at any thread count)
  int64_t th, tw;       // tiles down and across an image
  int64_t seg, nseg;    // tiles per row segment, segments per tile row
  int64_t upb, nblk;    // segments (units) per block, blocks
  int64_t T;            // most tiles in a block: the width of its GEMMs
};

// Fills g's plan for tile side m (2 or 4) and element size es; false if the shape does not fit BLAS's
// int sizes (the caller then takes another path).
bool wino_plan(WinoConv& g, int m, int es);
// Scratch bytes wino_run needs with nt threads (the bind-time workspace: each thread's transformed
// input and products; the transformed weights are taken from the allocator for the call).
size_t wino_scratch_bytes(const WinoConv& g, int es, int nt);
// y (contiguous N x Co x Ho x Wo) = the convolution of x (contiguous) by w (contiguous); scratch holds
// wino_scratch_bytes(g, sizeof(T), nt) bytes, 64-byte aligned. nt threads (1: the caller's only).
// false when an output came out Inf or NaN: Winograd's transforms turn an Inf into NaN and spread a
// NaN over its tile, so the caller then redoes the call directly (im2col + GEMM).
template <typename T>
bool wino_run(const WinoConv& g, const T* x, const T* w, T* y, void* scratch, int nt);

}  // namespace mf
