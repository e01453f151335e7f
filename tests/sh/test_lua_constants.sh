#!/usr/bin/env bash
# One source of truth for the ABI's codes: the Lua library reads every dtype, device and limit code
# as C.MF_* (src/core/types.h, through the cdef the build makes from abi.h) once at load, and never
# retypes one as a literal. This finds the usual forms of a retyped code in lua/moonflow:
#   a dtype or device field compared with a number (t.device_id == 0, dtype_id >= 2, 0 ~= dev.device_id),
#   a number passed as the dtype or device of a new tensor or of the memory statistics
#   (mf._new_tensor(shape, 4), mf_tensor_init(t, n, shape, 0, 0), mf_memory_stats_get(0, s)).
set -u
cd "$(dirname "$0")/../.."
fail=0

pattern='(\b(dtype_id|device_id|dtype|device)\s*(==|~=|<=|>=|<|>)\s*-?\d)|(\b\d+\s*(==|~=|<=|>=|<|>)\s*[\w.]*\b(dtype_id|device_id)\b)|(new_tensor\s*\([^()]*,\s*\d+\s*[,)])|(mf_tensor_init\s*\(.*,\s*\d+\s*\)\s*)|(mf_memory_(stats_get|empty_cache)\s*\(\s*\d)'

# the pattern must catch what it is for (a check that cannot fail is no check)
probe=$(mktemp)
trap 'rm -f "$probe"' EXIT
printf '%s\n' "if t.device_id == 0 then" "local int = dtype_id >= 2" "if 1 ~= x.dtype_id then" \
  "local s = mf._new_tensor({n}, 4)" "C.mf_tensor_init(t, n, shape, dt, 0)" "C.mf_memory_stats_get(0, buf)" >"$probe"
n=$(grep -cP "$pattern" "$probe")
[ "$n" -eq 6 ] || { echo "FAIL: the pattern caught $n of 6 known retyped codes"; fail=1; }
printf '%s\n' "if t.device_id == HOST then" "local int = not IS_FLOAT[t.dtype_id]" "if #s > MAX_DIMS then" \
  "local s = mf._new_tensor({n}, UINT8, device)" "for d = 0, t.ndim - 1 do" >"$probe"
n=$(grep -cP "$pattern" "$probe")
[ "$n" -eq 0 ] || { echo "FAIL: the pattern caught $n of 5 lines that retype no code"; fail=1; }

hits=$(grep -nP "$pattern" lua/moonflow/*.lua)
if [ -n "$hits" ]; then
  echo "FAIL: a Lua file retypes an ABI code as a number; read it as C.MF_* once at load instead"
  echo "(src/core/types.h; see the top of lua/moonflow/tensor.lua):"
  echo "$hits"
  fail=1
fi
[ "$fail" -eq 0 ] && echo 'ok: no ABI code retyped in lua/moonflow'
exit "$fail"
