#!/usr/bin/env bash
# OpenBLAS loaded at library load (src/kernels/cpu/blas.cc): with OPENBLAS_CORETYPE unset, an
# AVX-512 CPU (F, BW, DQ, VL, CD in /proc/cpuinfo) gets the SkylakeX kernels and mf.blas_info()
# says moonflow chose them, and the variable is gone again once OpenBLAS has loaded; a user's
# OPENBLAS_CORETYPE wins; an OpenBLAS already in the process keeps its own choice; a missing
# library or symbol (MF_BLAS_LIBRARY) is a clear error and exit status 1, never a crash. GEMMs on
# the kernels chosen match a float64 loop and give the same bits on 1 and 2 threads.
set -u
MF=${1:?usage: test_blas.sh path/to/moonflow}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() {  # what, output, expected fixed string
  if ! grep -qF -- "$3" <<<"$2"; then echo "FAIL: $1: '$3' not in: $2"; fail=1; fi
}
cat >"$tmp/info.lua" <<'LUA'
local b = mf.blas_info()
print(('core=%s chosen=%s user=%s preloaded=%s loaded=%s parallel=%s env=%s')
  :format(b.core:lower(), tostring(b.chosen), tostring(b.user_coretype), tostring(b.preloaded),
          tostring(b.loaded), b.parallel, tostring(os.getenv('OPENBLAS_CORETYPE'))))
print('library=' .. b.library)
print('config=' .. b.config)
LUA
avx512=1
for f in avx512f avx512bw avx512dq avx512vl avx512cd; do
  grep -qw "$f" /proc/cpuinfo || avx512=0
done

out=$(env -u OPENBLAS_CORETYPE -u MF_BLAS_LIBRARY "$MF" "$tmp/info.lua" 2>&1)
if [ $avx512 = 1 ]; then
  check 'AVX-512 CPU, OPENBLAS_CORETYPE unset: moonflow picks SkylakeX and restores the environment' \
    "$out" 'core=skylakex chosen=true user=false preloaded=false loaded=true parallel=openmp env=nil'
  check 'the config line names the kernels in use' "$out" 'SkylakeX'
else
  check 'no AVX-512: OpenBLAS chooses' "$out" 'chosen=false user=false preloaded=false loaded=true parallel=openmp env=nil'
fi
check 'the OpenMP build, by its full path' "$out" 'library=/'
check 'OpenBLAS reports its version' "$out" 'config=OpenBLAS '

out=$(OPENBLAS_CORETYPE=Haswell "$MF" "$tmp/info.lua" 2>&1)
check "a user's OPENBLAS_CORETYPE wins and stays set" "$out" \
  'core=haswell chosen=false user=true preloaded=false loaded=true parallel=openmp env=Haswell'

# an OpenBLAS in the process before libmoonflow (LD_PRELOAD here; a host that links it alike)
lib=$(env -u OPENBLAS_CORETYPE "$MF" -e 'print(mf.blas_info().library)' 2>/dev/null)
# (a sanitizer build's runtime must come first among the preloads)
san=$(ldd "$MF" 2>/dev/null | awk '/lib(a|t)san\.so/ {print $3}' | head -1)
if [ -f "$lib" ]; then
  out=$(env -u OPENBLAS_CORETYPE LD_PRELOAD="${san:+$san }$lib" "$MF" "$tmp/info.lua" 2>&1)
  check 'a preloaded OpenBLAS is used as it is' "$out" 'chosen=false user=false preloaded=true loaded=true'
  if grep -q 'core=unknown' <<<"$out"; then echo "FAIL: preloaded core read too early: $out"; fail=1; fi
else
  echo "FAIL: blas_info().library is not a file: '$lib'"; fail=1
fi

out=$(MF_BLAS_LIBRARY="$tmp/nosuch/libopenblas.so" "$MF" -e 'print("ran")' 2>&1); st=$?
[ $st -eq 1 ] || { echo "FAIL: a missing BLAS library must exit 1, got $st: $out"; fail=1; }
check 'a missing library says what it tried' "$out" "moonflow: cannot load OpenBLAS"
check 'a missing library names the file' "$out" "$tmp/nosuch/libopenblas.so"
if grep -q '^ran$' <<<"$out"; then echo "FAIL: the script ran without BLAS: $out"; fail=1; fi
out=$(MF_BLAS_LIBRARY=libm.so.6 "$MF" -e 'print("ran")' 2>&1); st=$?
[ $st -eq 1 ] || { echo "FAIL: a library without the BLAS symbols must exit 1, got $st: $out"; fail=1; }
check 'a missing symbol is named' "$out" 'the BLAS library libm.so.6 has no cblas_sgemm'

# GEMM and GEMV on the kernels moonflow chose: against a float64 loop, and 1 vs 2 threads bit for bit
cat >"$tmp/gemm.lua" <<'LUA'
mf.manual_seed(7)
local worst = 0
for _, s in ipairs{{67, 129, 93}, {1, 300, 257}, {300, 1, 257}, {256, 256, 256}} do
  local m, n, k = s[1], s[2], s[3]
  for _, dt in ipairs{'float32', 'float64'} do
    local a, b = mf.cast(mf.randn(m, k), dt), mf.cast(mf.randn(k, n), dt)
    local c = mf.matmul(a, b)
    local A, B, Cd = a:double(), b:double(), c:double()
    local ap, bp, cp = A:data(), B:data(), Cd:data()
    for i = 0, m - 1, 7 do
      for j = 0, n - 1, 5 do
        local r = 0
        for p = 0, k - 1 do r = r + ap[i * k + p] * bp[p * n + j] end
        local e = math.abs(cp[i * n + j] - r) / (1 + math.abs(r))
        local tol = dt == 'float32' and 1e-5 * math.sqrt(k) or 1e-13 * math.sqrt(k)
        if e > tol then error(('%s %dx%dx%d: c[%d][%d] %g, reference %g'):format(dt, m, n, k, i + 1, j + 1, cp[i * n + j], r)) end
        if dt == 'float32' then worst = math.max(worst, e) end
      end
    end
    mf.set_num_threads(1)
    local c1 = mf.matmul(a, b)
    mf.set_num_threads(2)
    local c2 = mf.matmul(a, b)
    if not mf.equal(c1, c2):all():item() then error(('%s %dx%dx%d: 1 and 2 threads differ'):format(dt, m, n, k)) end
  end
end
print('gemm ok', mf.blas_info().core)
LUA
out=$(env -u OPENBLAS_CORETYPE "$MF" "$tmp/gemm.lua" 2>&1)
check 'GEMM on the chosen kernels' "$out" 'gemm ok'
exit $fail
