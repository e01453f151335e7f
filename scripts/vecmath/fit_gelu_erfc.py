# Fits the erfc of float32 gelu (src/core/vecmath.cc): erf(z)/z as a polynomial in z^2 below |z|
# 0.75, and log(erfc(a)) - log(t) + a^2 as a polynomial in t = 1 / (1 + a/2) above, each fitted at
# Chebyshev points in float64, then its coefficients fixed to float32 from the highest degree down,
# refitting the lower ones after each. Prints each degree's worst error on a dense grid and its
# coefficients (highest degree first): the degree-8 tail and degree-5 small fits are the kernel's.
# Needs numpy (Debian's python3-numpy).
# usage: /usr/bin/python3 scripts/vecmath/fit_gelu_erfc.py
import numpy as np, math
N=6000
def cheb(lo,hi):
    j=np.arange(N); return (lo+hi)/2+(hi-lo)/2*np.cos(np.pi*(j+0.5)/N)
def seqfit(xv, f, deg):
    # fit, then fix coefficients to float32 from the highest degree down, refitting the rest
    fixed=[]; res=f.copy()
    for d in range(deg, -1, -1):
        V=np.vander(xv,d+1); c,*_=np.linalg.lstsq(V,res,rcond=None)
        cf=float(np.float32(c[0])); fixed.append(cf); res=res-cf*xv**d
    return np.array(fixed)
def tail(deg):
    a=cheb(0.75,10.5); t=1/(1+0.5*a)
    f=np.array([math.log(math.erfc(v)) for v in a])-np.log(t)+a*a
    c=seqfit(t,f,deg)
    aa=np.linspace(0.75,10.5,300001); tt=1/(1+0.5*aa)
    ff=np.array([math.log(math.erfc(v)) for v in aa])-np.log(tt)+aa*aa
    return c, np.max(np.abs(np.polyval(c,tt)-ff))
def small(deg):
    z=cheb(1e-6,0.75); s=z*z
    f=np.array([math.erf(v)/v for v in z])
    c=seqfit(s,f,deg)
    zz=np.linspace(1e-6,0.75,300001)
    ff=np.array([math.erf(v)/v for v in zz])
    return c, np.max(np.abs(np.polyval(c,zz*zz)/ff-1))
for d in (7,8,9):
    c,e=tail(d); print('tail',d,e); print('  ', ', '.join('%.9g'%v for v in c))
for d in (4,5,6):
    c,e=small(d); print('small',d,e); print('  ', ', '.join('%.9g'%v for v in c))
