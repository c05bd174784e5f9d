#!/usr/bin/python3
# Accuracy of drc-approximate-math's f32 exp, emulated in numpy step by step
# (the constants and operation order of MLIR 22's ExpApproximation, which
# `drc-opt --drc-approximate-math` prints for a scalar math.exp), against
# exp in double over the normal range of f32 results.
#   /usr/bin/python3 bench/exp-approximation.py   (python3-numpy)
import numpy as np
f=np.float32
def fma(a,b,c): return (np.float64(a)*np.float64(b)+np.float64(c)).astype(np.float32)
x=np.linspace(-87,88,2000001).astype(np.float32)
x=np.concatenate([x, np.linspace(-10,10,2000001).astype(np.float32)])
a=np.where(x>=f(-87.8), x, f(-87.8)); a=np.where(a<=f(88.8), a, f(88.8))
n=np.floor(fma(a,f(1.44269502),f(0.5))); n=np.clip(n,f(-127),f(127)).astype(np.float32)
r=fma(f(-0.693359375),n,a); r=fma(f(2.12194442E-4),n,r)
p=fma(r,f(1.98756912E-4),f(0.00139819994)); p=fma(p,r,f(0.00833345205)); p=fma(p,r,f(0.0416657962)); p=fma(p,r,f(0.166666657)); p=fma(p,r,f(0.5))
r2=(r*r).astype(np.float32); y=fma(p,r2,r); y=(y+f(1)).astype(np.float32)
scale=((n.astype(np.int32)+127)<<23).view(np.float32)
res=(y*scale).astype(np.float32)
ref=np.exp(x.astype(np.float64))
ok=ref>1.2e-38
rel=np.abs(res[ok]-ref[ok])/ref[ok]
ulp=np.abs(res[ok].astype(np.float64)-ref[ok])/np.spacing(ref[ok].astype(np.float32)).astype(np.float64)
print("max rel", rel.max(), "max ulp", ulp.max(), "mean ulp", ulp.mean())
