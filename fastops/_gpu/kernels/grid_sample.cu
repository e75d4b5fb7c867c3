// GridSample forward (ONNX GridSample 16/20/22, MMCV grid_sampler, torch grid_sample).
// Preamble defines:
//   TIN              element type of x and out (float16 arrives as float)
//   T                compute type: float (float32, 8/16-bit integers) or double
//   TIN_INT          1 when TIN is an integer type: results are rounded half away from
//                    zero and saturated to [TIN_MIN, TIN_MAX], NaN -> 0
//   TIN_MIN TIN_MAX  TIN's range (integer types; 0 otherwise)
// The arithmetic is the CPU kernel's (fastops/_cpu/include/grid_sample.hpp) operation
// for operation, with explicit round-to-nearest intrinsics so that NVRTC cannot contract
// a*b+c into an FMA: GPU results are bit-identical to the CPU ones (fastops compiles
// without -ftz, so denormals behave as on the CPU).
// One thread per (output point, group of `cpt` channels): the point's taps and weights
// are computed once per group and applied to its channels; consecutive threads take
// consecutive points, so for a fixed channel the writes are coalesced.  The launcher
// picks cpt so that small batches still fill the device (every channel in one group
// when N * points is large).  Grid-stride loops, 64-bit indices.

#define GS_ZEROS 0
#define GS_BORDER 1
#define GS_REFLECTION 2
#define GS_BILINEAR 0
#define GS_NEAREST 1
#define GS_BICUBIC 2

// One input axis: torch's unnormalize / clip / reflect.  vec4d: the 4-D (vectorized
// CPU kernel) order of operations, else the 5-D (scalar kernel) one.
struct GsAxis {
  i64 size;
  T max_val, scale, low, tspan, rmin, rspan;
  int align, flat, vec4d;
};

__device__ __forceinline__ GsAxis gs_axis(i64 n, int align, int vec4d) {
  GsAxis a;
  a.size = n;
  a.align = align;
  a.vec4d = vec4d;
  a.max_val = (T)(n - 1);
  a.scale = a.low = a.tspan = a.rmin = a.rspan = (T)0;
  if (vec4d) {
    a.scale = align ? div_rn((T)(n - 1), (T)2) : div_rn((T)n, (T)2);
    a.low = align ? (T)0 : (T)-0.5;
    a.tspan = align ? mul_rn((T)(n - 1), (T)2) : mul_rn((T)n, (T)2);
  } else {
    const i64 tlo = align ? 0 : -1, thi = align ? 2 * (n - 1) : 2 * n - 1;
    a.rmin = div_rn((T)tlo, (T)2);
    a.rspan = div_rn((T)(thi - tlo), (T)2);
  }
  a.flat = align && n <= 1;
  return a;
}

__device__ __forceinline__ T gs_unnormalize(const GsAxis& a, T g) {
  if (a.vec4d) {
    const T v = mul_rn(add_rn(g, (T)1), a.scale);
    return a.align ? v : sub_rn(v, (T)0.5);
  }
  if (a.align) return mul_rn(div_rn(add_rn(g, (T)1), (T)2), a.max_val);
  return div_rn(sub_rn(mul_rn(add_rn(g, (T)1), (T)a.size), (T)1), (T)2);
}

// Into [0, size - 1]; NaN -> 0.
__device__ __forceinline__ T gs_clip(const GsAxis& a, T v) {
  const T r = v > (T)0 ? v : (T)0;
  return r < a.max_val ? r : a.max_val;
}

__device__ __forceinline__ T gs_reflect(const GsAxis& a, T v) {
  if (a.flat) return (T)0;
  if (a.vec4d) {
    const T ab = a.align ? fabs(v) : fabs(sub_rn(v, a.low));
    const T flips = trunc(div_rn(ab, a.tspan));
    const T extra = sub_rn(ab, mul_rn(flips, a.tspan));
    const T other = sub_rn(a.tspan, extra);
    const T r = extra < other ? extra : other;
    return a.align ? r : add_rn(r, a.low);
  }
  const T ab = fabs(sub_rn(v, a.rmin));
  // fmod is exact, so computing it in double gives the float result too; libdevice's
  // fmodf uses a flush-to-zero reciprocal internally (scripts/check_kernels.py refuses .ftz)
  const T extra = (T)fmod((double)ab, (double)a.rspan);
  const T q = floor(div_rn(ab, a.rspan));
  const bool odd = q < (T)2147483648.0 && (((i64)q) & 1);
  return odd ? add_rn(sub_rn(a.rspan, extra), a.rmin) : add_rn(extra, a.rmin);
}

__device__ __forceinline__ T gs_pad(const GsAxis& a, T v, int pad) {
  if (pad == GS_BORDER) return gs_clip(a, v);
  if (pad == GS_REFLECTION) return gs_clip(a, gs_reflect(a, v));
  return v;
}

// Integer-valued coordinate v -> element offset and inside flag; outside: offset 0.
__device__ __forceinline__ void gs_tap(T v, i64 size, i64 stride, i64& off, bool& in) {
  off = 0;
  in = false;
  if (v >= (T)0 && v <= (T)size) {
    const i64 i = (i64)v;
    if (i < size) {
      off = i * stride;
      in = true;
    }
  }
}

// The two linear taps floor(v), floor(v) + 1.
struct GsLin {
  i64 o0, o1;
  bool m0, m1;
  T f;
};

__device__ __forceinline__ GsLin gs_lin(T v, i64 size, i64 stride) {
  GsLin a;
  a.f = floor(v);
  a.o0 = a.o1 = 0;
  a.m0 = a.m1 = false;
  if (a.f >= (T)-1 && a.f <= (T)size) {
    const i64 i = (i64)a.f;
    if (i >= 0 && i < size) {
      a.o0 = i * stride;
      a.m0 = true;
    }
    if (i + 1 >= 0 && i + 1 < size) {
      a.o1 = (i + 1) * stride;
      a.m1 = true;
    }
  }
  return a;
}

// Keys cubic weights of the taps -1, 0, 1, 2 (A = -0.75), torch's order.
__device__ __forceinline__ void gs_cubic_coeffs(T t, T c[4]) {
  const T A = (T)-0.75;
  const T A5 = mul_rn((T)5, A), A8 = mul_rn((T)8, A), A4 = mul_rn((T)4, A);
  const T A2 = add_rn(A, (T)2), A3 = add_rn(A, (T)3);
  T v = add_rn(t, (T)1);
  c[0] = sub_rn(mul_rn(add_rn(mul_rn(sub_rn(mul_rn(A, v), A5), v), A8), v), A4);
  v = t;
  c[1] = add_rn(mul_rn(mul_rn(sub_rn(mul_rn(A2, v), A3), v), v), (T)1);
  v = sub_rn((T)1, t);
  c[2] = add_rn(mul_rn(mul_rn(sub_rn(mul_rn(A2, v), A3), v), v), (T)1);
  v = sub_rn((T)2, t);
  c[3] = sub_rn(mul_rn(add_rn(mul_rn(sub_rn(mul_rn(A, v), A5), v), A8), v), A4);
}

__device__ __forceinline__ T gs_load(const TIN* src, i64 o, bool in) {
  return in ? (T)src[o] : (T)0;
}

__device__ __forceinline__ TIN gs_store(T v) {
#if TIN_INT
  if (v != v) return (TIN)0;
  T r = trunc(v);
  const T d = sub_rn(v, r);
  if (d >= (T)0.5) r = add_rn(r, (T)1);
  else if (d <= (T)-0.5) r = sub_rn(r, (T)1);
  if (r <= (T)(TIN_MIN)) return (TIN)(TIN_MIN);
  if (r >= (T)(TIN_MAX)) return (TIN)(TIN_MAX);
  return (TIN)r;
#else
  return (TIN)v;
#endif
}

// x (N, C, H, W) with H, W >= 1, any element strides; grid (N, Ho, Wo, 2); out
// (N, C, Ho, Wo) contiguous.  mode: 0 bilinear, 1 nearest, 2 bicubic; pad: 0 zeros,
// 1 border, 2 reflection.
extern "C" __global__ void grid_sample_2d(const TIN* x, const T* grid, i64 N, i64 C, i64 H,
                                          i64 W, i64 sN, i64 sC, i64 sH, i64 sW, i64 Ho,
                                          i64 Wo, i64 gN, i64 gH, i64 gW, i64 gK, int mode,
                                          int pad, int align, i64 cpt, TIN* out) {
  const i64 P = Ho * Wo;
  const i64 G = (C + cpt - 1) / cpt;
  const i64 total = N * G * P;
  const GsAxis ax = gs_axis(W, align, 1), ay = gs_axis(H, align, 1);
  for (i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += (i64)blockDim.x * gridDim.x) {
    const i64 p = idx % P, t = idx / P, n = t / G, c0 = (t % G) * cpt;
    const i64 nc = C - c0 < cpt ? C - c0 : cpt;
    const T* q = grid + n * gN + (p / Wo) * gH + (p % Wo) * gW;
    const T gx = q[0], gy = q[gK];
    const TIN* src = x + n * sN + c0 * sC;
    TIN* dst = out + (n * C + c0) * P + p;
    if (mode == GS_NEAREST) {
      i64 ox, oy;
      bool mx, my;
      gs_tap(rint(gs_pad(ax, gs_unnormalize(ax, gx), pad)), W, sW, ox, mx);
      gs_tap(rint(gs_pad(ay, gs_unnormalize(ay, gy), pad)), H, sH, oy, my);
      const i64 o = oy + ox;
      const bool in = (mx && my) || pad != GS_ZEROS;  // the CPU masks zeros padding only
      for (i64 c = 0; c < nc; ++c) dst[c * P] = gs_store(gs_load(src + c * sC, o, in));
    } else if (mode == GS_BILINEAR) {
      const T xs = gs_pad(ax, gs_unnormalize(ax, gx), pad);
      const T ys = gs_pad(ay, gs_unnormalize(ay, gy), pad);
      const GsLin a = gs_lin(xs, W, sW), b = gs_lin(ys, H, sH);
      const T wx = sub_rn(xs, a.f), ex = sub_rn((T)1, wx);
      const T ny = sub_rn(ys, b.f), sy = sub_rn((T)1, ny);
      const T w0 = mul_rn(sy, ex), w1 = mul_rn(sy, wx), w2 = mul_rn(ny, ex),
              w3 = mul_rn(ny, wx);
      const i64 o0 = b.o0 + a.o0, o1 = b.o0 + a.o1, o2 = b.o1 + a.o0, o3 = b.o1 + a.o1;
      const bool m0 = b.m0 && a.m0, m1 = b.m0 && a.m1, m2 = b.m1 && a.m0,
                 m3 = b.m1 && a.m1;
      for (i64 c = 0; c < nc; ++c) {
        const TIN* s = src + c * sC;
        const T v = add_rn(add_rn(add_rn(mul_rn(gs_load(s, o0, m0), w0),
                                         mul_rn(gs_load(s, o1, m1), w1)),
                                  mul_rn(gs_load(s, o2, m2), w2)),
                           mul_rn(gs_load(s, o3, m3), w3));
        dst[c * P] = gs_store(v);
      }
    } else {  // bicubic: padding applied to each tap
      i64 xo[4], yo[4];
      bool xm[4], ym[4];
      T cx[4], cy[4];
      const T xv = gs_unnormalize(ax, gx), yv = gs_unnormalize(ay, gy);
      const T fx = floor(xv), fy = floor(yv);
      gs_cubic_coeffs(sub_rn(xv, fx), cx);
      gs_cubic_coeffs(sub_rn(yv, fy), cy);
      for (int k = 0; k < 4; ++k) {
        const T tx = gs_pad(ax, add_rn(fx, (T)(k - 1)), pad);
        const T ty = gs_pad(ay, add_rn(fy, (T)(k - 1)), pad);
        if (pad == GS_ZEROS) {
          gs_tap(tx, W, sW, xo[k], xm[k]);
          gs_tap(ty, H, sH, yo[k], ym[k]);
        } else {  // in [0, size - 1]; unmasked as on the CPU
          i64 i = (i64)tx, j = (i64)ty;
          i = i > W - 1 ? W - 1 : i;
          j = j > H - 1 ? H - 1 : j;
          xo[k] = i * sW;
          yo[k] = j * sH;
          xm[k] = ym[k] = true;
        }
      }
      for (i64 c = 0; c < nc; ++c) {
        const TIN* s = src + c * sC;
        T r[4];
        for (int i = 0; i < 4; ++i) {
          const TIN* row = s + yo[i];
          r[i] = add_rn(add_rn(add_rn(mul_rn(cx[0], gs_load(row, xo[0], ym[i] && xm[0])),
                                      mul_rn(cx[1], gs_load(row, xo[1], ym[i] && xm[1]))),
                               mul_rn(cx[2], gs_load(row, xo[2], ym[i] && xm[2]))),
                        mul_rn(cx[3], gs_load(row, xo[3], ym[i] && xm[3])));
        }
        dst[c * P] = gs_store(add_rn(add_rn(add_rn(mul_rn(cy[0], r[0]), mul_rn(cy[1], r[1])),
                                            mul_rn(cy[2], r[2])),
                                     mul_rn(cy[3], r[3])));
      }
    }
  }
}

// x (N, C, D, H, W) with D, H, W >= 1; grid (N, Do, Ho, Wo, 3); out (N, C, Do, Ho, Wo)
// contiguous.  mode: 0 trilinear, 1 nearest.
extern "C" __global__ void grid_sample_3d(const TIN* x, const T* grid, i64 N, i64 C, i64 D,
                                          i64 H, i64 W, i64 sN, i64 sC, i64 sD, i64 sH,
                                          i64 sW, i64 Do, i64 Ho, i64 Wo, i64 gN, i64 gD,
                                          i64 gH, i64 gW, i64 gK, int mode, int pad,
                                          int align, i64 cpt, TIN* out) {
  const i64 P = Do * Ho * Wo;
  const i64 G = (C + cpt - 1) / cpt;
  const i64 total = N * G * P;
  const GsAxis ax = gs_axis(W, align, 0), ay = gs_axis(H, align, 0),
               az = gs_axis(D, align, 0);
  for (i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += (i64)blockDim.x * gridDim.x) {
    const i64 p = idx % P, t = idx / P, n = t / G, c0 = (t % G) * cpt;
    const i64 nc = C - c0 < cpt ? C - c0 : cpt;
    const i64 wo = p % Wo, tp = p / Wo, ho = tp % Ho, dz = tp / Ho;
    const T* q = grid + n * gN + dz * gD + ho * gH + wo * gW;
    const T gx = q[0], gy = q[gK], gz = q[2 * gK];
    const TIN* src = x + n * sN + c0 * sC;
    TIN* dst = out + (n * C + c0) * P + p;
    const T xs = gs_pad(ax, gs_unnormalize(ax, gx), pad);
    const T ys = gs_pad(ay, gs_unnormalize(ay, gy), pad);
    const T zs = gs_pad(az, gs_unnormalize(az, gz), pad);
    if (mode == GS_NEAREST) {
      i64 ox, oy, oz;
      bool mx, my, mz;
      gs_tap(rint(xs), W, sW, ox, mx);
      gs_tap(rint(ys), H, sH, oy, my);
      gs_tap(rint(zs), D, sD, oz, mz);
      const i64 o = oz + oy + ox;
      const bool in = (mz && my && mx) || pad != GS_ZEROS;
      for (i64 c = 0; c < nc; ++c) dst[c * P] = gs_store(gs_load(src + c * sC, o, in));
    } else {
      const GsLin a = gs_lin(xs, W, sW), b = gs_lin(ys, H, sH), cz = gs_lin(zs, D, sD);
      const T ex = sub_rn(add_rn(a.f, (T)1), xs), wx = sub_rn(xs, a.f);
      const T ey = sub_rn(add_rn(b.f, (T)1), ys), wy = sub_rn(ys, b.f);
      const T ez = sub_rn(add_rn(cz.f, (T)1), zs), wz = sub_rn(zs, cz.f);
      const T w[8] = {mul_rn(mul_rn(ex, ey), ez), mul_rn(mul_rn(wx, ey), ez),
                      mul_rn(mul_rn(ex, wy), ez), mul_rn(mul_rn(wx, wy), ez),
                      mul_rn(mul_rn(ex, ey), wz), mul_rn(mul_rn(wx, ey), wz),
                      mul_rn(mul_rn(ex, wy), wz), mul_rn(mul_rn(wx, wy), wz)};
      const i64 zo[2] = {cz.o0, cz.o1}, yo[2] = {b.o0, b.o1}, xo[2] = {a.o0, a.o1};
      const bool zm[2] = {cz.m0, cz.m1}, ym[2] = {b.m0, b.m1}, xm[2] = {a.m0, a.m1};
      i64 o[8];
      bool m[8];
      for (int k = 0; k < 8; ++k) {
        o[k] = zo[k >> 2] + yo[(k >> 1) & 1] + xo[k & 1];
        m[k] = zm[k >> 2] && ym[(k >> 1) & 1] && xm[k & 1];
      }
      for (i64 c = 0; c < nc; ++c) {
        const TIN* s = src + c * sC;
        T acc = (T)0;
        for (int k = 0; k < 8; ++k) acc = add_rn(acc, mul_rn(gs_load(s, o[k], m[k]), w[k]));
        dst[c * P] = gs_store(acc);
      }
    }
  }
}
