-- moonflow: require 'moonflow' returns the mf table (also the global `mf` in the moonflow executable).
local mf = {_VERSION = '0.1.0'}
package.loaded['moonflow'] = mf

local C = require 'moonflow.ffi_abi'
-- Room for the JIT's traces: an eager training step runs a few hundred distinct paths (dispatch,
-- tape, gradient rules, modules), and with LuaJIT's defaults (1000 traces, 512 KB of machine code)
-- the traces filled the area every few hundred steps; each full area flushed every trace and
-- compiled them all again (9% of a small MLP's eager step went to the compiler). A host may set
-- its own limits after loading moonflow.
if jit and jit.opt then jit.opt.start('maxtrace=8000', 'maxmcode=8192') end
mf._VERSION = require('ffi').string(C.mf_version())
mf.kernels = require 'moonflow.kernels'
require('moonflow.tensor')(mf)
require('moonflow.ops')(mf)
require('moonflow.torch7')(mf)
require('moonflow.graph')(mf)
require('moonflow.autodiff')(mf)
require('moonflow.tape')(mf)
require('moonflow.fusion')(mf)
require('moonflow.session')(mf)
require('moonflow.train')(mf)
require('moonflow.data')(mf)
require('moonflow.serialize')(mf)
require('moonflow.nn')(mf)
require('moonflow.optim')(mf)
require('moonflow.fit')(mf)
require('moonflow.help')(mf)
require('moonflow.linalg')(mf)  -- einsum, allclose (after help: they add their docs to mf._docs)
require('moonflow.cuda')(mf)  -- mf.cuda (after help, as linalg)
return mf
