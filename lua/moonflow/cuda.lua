-- mf.cuda: the CUDA backend's status and controls (src/kernels/cuda/backend.h through the C ABI).
-- Tensors move with t:cuda(), t:cpu(), t:to(name); modules with m:cuda(), m:cpu(); a graph runs on a
-- device with mf.Session{device = 'cuda'}. Without a GPU (or a build without the backend) every
-- request for cuda is an error carrying mf.cuda.reason().
local ffi = require 'ffi'
local C = require 'moonflow.ffi_abi'
local K = require 'moonflow.kernels'

return function(mf)
  local cuda = {}

  function cuda.is_available() return C.mf_cuda_available() == 1 end
  function cuda.device_count() return C.mf_cuda_device_count() end
  -- why cuda is unavailable ('' when it is available)
  function cuda.reason() return ffi.string(C.mf_cuda_reason()) end
  -- waits for all work queued on the GPU; a no-op without one
  function cuda.synchronize() K.check(C.mf_cuda_synchronize()) end
  function cuda.set_allow_tf32(allow)
    if type(allow) ~= 'boolean' then
      error(('cuda.set_allow_tf32: allow is a %s; expected true or false'):format(type(allow)), 2)
    end
    K.check(C.mf_cuda_set_allow_tf32(allow and 1 or 0))
  end
  function cuda.allow_tf32() return C.mf_cuda_allow_tf32() == 1 end
  function cuda.sync_count() return tonumber(C.mf_cuda_sync_count()) end
  mf.cuda = cuda

  local D = mf._docs
  D['cuda.is_available'] = 'mf.cuda.is_available(): true when this build has the CUDA backend and the CUDA runtime found a GPU when moonflow loaded (device "cuda" is then in mf.devices()).'
  D['cuda.device_count'] = 'mf.cuda.device_count(): the number of GPUs the CUDA runtime reports (0 without the backend or a GPU); moonflow computes on the first.'
  D['cuda.reason'] = "mf.cuda.reason(): why cuda is not available ('this build has no CUDA backend' or 'no CUDA device: <the runtime's text>'); '' when it is."
  D['cuda.synchronize'] = 'mf.cuda.synchronize(): waits until every kernel and copy queued on the GPU has run (an error names what failed); a no-op without a GPU. Host reads (:item(), printing, :cpu(), session fetches) synchronise by themselves.'
  D['cuda.set_allow_tf32'] = 'mf.cuda.set_allow_tf32(allow): lets cuBLAS matrix products use TF32 tensor cores (faster, about 10 bits of mantissa); off by default, so float32 products match the CPU within float32 rounding.'
  D['nn.Module:cuda'] = "m:cuda(): moves every parameter, gradient and buffer to the GPU in place (m:to('cuda')); an error saying why when cuda is not available. Returns m."
  D['nn.Module:cpu'] = "m:cpu(): m:to('cpu'). Returns m."
  D['cuda.sync_count'] = 'mf.cuda.sync_count(): how many times the host has waited for the GPU since moonflow loaded (host reads, mf.cuda.synchronize, routines that must read device values); 0 without a GPU. The difference over a training step is its host synchronisations.'
  D['cuda.allow_tf32'] = 'mf.cuda.allow_tf32(): whether TF32 products are allowed (mf.cuda.set_allow_tf32).'
end
