// Fused elementwise programs -> CUDA C++ source. The generated text is the NVRTC cache key, so it
// holds nothing that varies between runs (no addresses, no counters), only the program and dtype.
#include "fused_codegen.h"

#include <set>
#include <sstream>

#include "../../core/error.h"
#include "../../core/pointwise.h"

#define MF_FUSED_STR2_(...) #__VA_ARGS__
#define MF_FUSED_STR_(x) MF_FUSED_STR2_(x)

namespace mf {
namespace cuda {

namespace {

// What every generated kernel shares: the argument block (the host's own declaration, as text) and
// the loads of the three input modes.
const char* const kPrelude = R"cu(
__device__ __forceinline__ long long mfk_offset(const MfFusedArgs& a, int k, long long i) {
  long long off = 0;
  for (int d = a.ndim - 1; d >= 0; --d) {
    long long q = i / a.shape[d];
    off += (i - q * a.shape[d]) * a.stride[k][d];
    i = q;
  }
  return off;
}
template <class T>
__device__ __forceinline__ T mfk_load(const MfFusedArgs& a, int k, long long i) {
  const T* p = static_cast<const T*>(a.in[k]);
  int m = a.mode[k];
  return m == 0 ? p[i] : m == 1 ? p[0] : p[mfk_offset(a, k, i)];
}
)cu";

}  // namespace

std::string fused_source(const FusedProgram& fp, int dtype) {
  const char* op = "fused_elementwise";
  if (dtype != MF_FLOAT32 && dtype != MF_FLOAT64)
    fail(op, ": cuda kernels are generated for float32 and float64; got ", dtype_name(dtype));
  if (fp.steps.empty()) fail(op, ": the program has no steps");
  std::ostringstream s;
  s << "// moonflow fused elementwise kernel (generated from a program of " << fp.steps.size() << " steps over "
    << fp.nin << " inputs)\n";
  s << MF_FUSED_STR_(MF_FUSED_ARGS_DECL) << "\n";
  s << "typedef " << (dtype == MF_FLOAT32 ? "float" : "double") << " T;\n";
  s << kPrelude;
  // one device function per distinct op, named by its pointwise code (stable for the process)
  std::set<const PointwiseKernels*> seen;
  for (const FusedStep& st : fp.steps) {
    const PointwiseKernels* k = st.k;
    if (!seen.insert(k).second) continue;
    if (!k->cuda)
      fail(op, ": ", k->name, " has no CUDA source (its functor needs a CudaSrc in src/core/pointwise.h), so a "
           "program holding it cannot run on cuda");
    s << "// " << k->name << "\ntemplate <class A>\n__device__ __forceinline__ A mf_op_" << k->name
      << (k->arity == 2 ? "(A x, A y) { " : "(A x) { ") << k->cuda << " }\n";
  }
  s << "extern \"C\" __global__ void " << kFusedKernelName << "(const MfFusedArgs a) {\n";
  s << "  const long long step = (long long)gridDim.x * blockDim.x;\n";
  s << "  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += step) {\n";
  for (int k = 0; k < fp.nin; ++k) s << "    const T v" << k << " = mfk_load<T>(a, " << k << ", i);\n";
  const int nsteps = int(fp.steps.size());
  for (int j = 0; j < nsteps; ++j) {
    const FusedStep& st = fp.steps[size_t(j)];
    s << "    const T v" << fp.nin + j << " = mf_op_" << st.k->name << "<T>(v" << st.a;
    if (st.b >= 0) s << ", v" << st.b;
    s << ");\n";
  }
  s << "    static_cast<T*>(a.out)[i] = v" << fp.nin + nsteps - 1 << ";\n";
  s << "  }\n}\n";
  return s.str();
}

}  // namespace cuda
}  // namespace mf
