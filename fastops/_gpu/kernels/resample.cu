// ONNX Resize (fastops.resize) on the GPU.
// Preamble defines:
//   T       element type of the data kernels (resize2d, nearest2d, round_cast, fill)
//   W       compute / weight type (float or double)
//   T_INT   1 for integer T (interpolated values are rounded half away from zero and
//           saturated to [T_MIN, T_MAX]), 0 for float T
//   T_BITS  8 * sizeof(T);  T_MIN, T_MAX  its range (integer T)
// The table builder and the apply are the CPU kernels' (fastops/_cpu/include/resample.hpp
// and interp.hpp) operation for operation, with round-to-nearest intrinsics so that
// NVRTC cannot contract a*b+c into an FMA: tables and results are bit-identical to the
// CPU ones (integers and floats alike).  One thread per output element (per table row
// for axis_table), grid-stride, 64-bit indices.

#define RS_NEAREST 0
#define RS_LINEAR 1
#define RS_CUBIC 2
#define RS_HALF_PIXEL 0
#define RS_HALF_PIXEL_SYMMETRIC 1
#define RS_PYTORCH_HALF_PIXEL 2
#define RS_ALIGN_CORNERS 3
#define RS_ASYMMETRIC 4
#define RS_TF_CROP_AND_RESIZE 5
#define RS_TF_HALF_PIXEL_FOR_NN 6

struct AxisParamsG {
  i64 n_in, n_out;
  double scale, out_width, roi_start, roi_end, cubic_a;
  int mode, ctm, nearest_mode, antialias, exclude_outside;
  i64 n_raw, tap_start;
};

// ------------------------------------------------------------------ tables
__device__ double source_coord(const AxisParamsG& p, i64 o) {
  const double y = (double)o;
  switch (p.ctm) {
    case RS_HALF_PIXEL_SYMMETRIC: {
      const double adjustment = div_rn((double)p.n_out, p.out_width);
      const double center = div_rn((double)p.n_in, 2.0);
      const double offset = mul_rn(center, sub_rn(1.0, adjustment));
      return sub_rn(add_rn(offset, div_rn(add_rn(y, 0.5), p.scale)), 0.5);
    }
    case RS_PYTORCH_HALF_PIXEL:
      return p.n_out > 1 ? sub_rn(div_rn(add_rn(y, 0.5), p.scale), 0.5) : 0.0;
    case RS_ALIGN_CORNERS:
      return p.n_out == 1 ? 0.0
                          : div_rn(mul_rn(y, (double)(p.n_in - 1)), sub_rn(p.out_width, 1.0));
    case RS_ASYMMETRIC:
      return div_rn(y, p.scale);
    case RS_TF_HALF_PIXEL_FOR_NN:
      return div_rn(add_rn(y, 0.5), p.scale);
    case RS_TF_CROP_AND_RESIZE: {
      const double d = sub_rn(p.roi_end, p.roi_start);
      const double n1 = (double)(p.n_in - 1);
      const double x = p.n_out == 1 ? div_rn(mul_rn(d, n1), 2.0)
                                    : div_rn(mul_rn(mul_rn(y, d), n1), sub_rn(p.out_width, 1.0));
      return add_rn(x, mul_rn(p.roi_start, n1));
    }
    default:
      return sub_rn(div_rn(add_rn(y, 0.5), p.scale), 0.5);
  }
}

__device__ __forceinline__ double tame(double x) {
  const double big = 4503599627370496.0;  // 2^52
  if (!(x == x)) return 0.0;
  return x < -big ? -big : (x > big ? big : x);
}

// interp.hpp cubic_coeffs (one coefficient) and cubic_kernel, in double
__device__ double cubic_coeff(double t, double a, i64 k) {
  if (k == 0 || k == 3) {
    // ((a * x - 5a) * x + 8a) * x - 4a
    const double x = k == 0 ? add_rn(t, 1.0) : add_rn(sub_rn(1.0, t), 1.0);
    const double p1 = mul_rn(sub_rn(mul_rn(a, x), mul_rn(5.0, a)), x);
    return sub_rn(mul_rn(add_rn(p1, mul_rn(8.0, a)), x), mul_rn(4.0, a));
  }
  const double x = k == 1 ? t : sub_rn(1.0, t);
  return add_rn(mul_rn(mul_rn(sub_rn(mul_rn(add_rn(a, 2.0), x), add_rn(a, 3.0)), x), x), 1.0);
}

__device__ double cubic_kernel(double x, double a) {
  x = fabs(x);
  const double x2 = mul_rn(x, x);
  const double x3 = mul_rn(x, x2);
  if (x <= 1.0)  // (a + 2) x^3 - (a + 3) x^2 + 1
    return add_rn(sub_rn(mul_rn(add_rn(a, 2.0), x3), mul_rn(add_rn(a, 3.0), x2)), 1.0);
  if (x < 2.0) {  // a x^3 - 5a x^2 + 8a x - 4a, left to right
    const double t = sub_rn(mul_rn(a, x3), mul_rn(mul_rn(5.0, a), x2));
    return sub_rn(add_rn(t, mul_rn(mul_rn(8.0, a), x)), mul_rn(4.0, a));
  }
  return 0.0;
}

__device__ double raw_coeff(const AxisParamsG& p, i64 k, double r) {
  if (!p.antialias) {
    if (p.mode == RS_LINEAR) return k == 0 ? sub_rn(1.0, r) : r;
    return cubic_coeff(r, p.cubic_a, k);
  }
  const double s = p.scale < 1.0 ? p.scale : 1.0;
  const double i = (double)(p.tap_start + k);
  if (p.mode == RS_LINEAR) {
    const double c = sub_rn(1.0, fabs(mul_rn(sub_rn(i, r), s)));
    return c < 0.0 ? 0.0 : (c > 1.0 ? 1.0 : c);
  }
  return cubic_kernel(mul_rn(s, sub_rn(i, r)), p.cubic_a);
}

struct TapCtx {
  const AxisParamsG* p;
  i64 base;
  double r, s1, s2;
  __device__ bool inside(i64 k) const { return base + k >= 0 && base + k < p->n_in; }
  __device__ double norm1(i64 k) const {
    const double c = raw_coeff(*p, k, r);
    return p->antialias ? div_rn(c, s1) : c;
  }
  __device__ double coeff(i64 k) const {
    if (!p->exclude_outside) return norm1(k);
    return inside(k) ? div_rn(norm1(k), s2) : 0.0;
  }
};

extern "C" __global__ void axis_table(i64 n_in, i64 n_out, int mode, int ctm, int nearest_mode,
                                      double scale, double out_width, double roi_start,
                                      double roi_end, double cubic_a, int antialias,
                                      int exclude_outside, i64 n_raw, i64 tap_start, i64 K,
                                      i64* first, i64* count, W* weights,
                                      unsigned char* extrap) {
  AxisParamsG p;
  p.n_in = n_in;
  p.n_out = n_out;
  p.scale = scale;
  p.out_width = out_width;
  p.roi_start = roi_start;
  p.roi_end = roi_end;
  p.cubic_a = cubic_a;
  p.mode = mode;
  p.ctm = ctm;
  p.nearest_mode = nearest_mode;
  p.antialias = antialias;
  p.exclude_outside = exclude_outside;
  p.n_raw = n_raw;
  p.tap_start = tap_start;
  for (i64 o = (i64)blockIdx.x * blockDim.x + threadIdx.x; o < n_out;
       o += (i64)blockDim.x * gridDim.x) {
    W* wrow = weights + o * K;
    for (i64 k = 0; k < K; ++k) wrow[k] = (W)0;
    first[o] = 0;
    count[o] = 0;
    double x = source_coord(p, o);
    if (ctm == RS_TF_CROP_AND_RESIZE && !(x >= 0.0 && x <= (double)(n_in - 1))) {
      extrap[o] = 1;
      continue;
    }
    extrap[o] = 0;
    x = tame(x);
    double fl = floor(x);
    double r = sub_rn(x, fl);
    if (mode == RS_NEAREST) {
      i64 idx = (i64)fl;
      if (r != 0.0) {
        bool up;
        if (nearest_mode == 1) up = r >= 0.5;        // round_prefer_ceil
        else if (nearest_mode == 2) up = false;      // floor
        else if (nearest_mode == 3) up = true;       // ceil
        else up = r > 0.5;                           // round_prefer_floor
        idx += up ? 1 : 0;
      }
      if (exclude_outside && (idx < 0 || idx >= n_in)) {
        extrap[o] = 2;
        continue;
      }
      first[o] = idx < 0 ? 0 : (idx > n_in - 1 ? n_in - 1 : idx);
      count[o] = 1;
      wrow[0] = (W)1;
      continue;
    }
    if (r == 0.0) {
      fl = sub_rn(fl, 1.0);
      r = 1.0;
    }
    TapCtx t;
    t.p = &p;
    t.base = (i64)fl + tap_start;
    t.r = r;
    t.s1 = 1.0;
    t.s2 = 1.0;
    if (antialias) {
      t.s1 = 0.0;
      for (i64 k = 0; k < n_raw; ++k) t.s1 = add_rn(t.s1, raw_coeff(p, k, r));
    }
    if (exclude_outside) {
      t.s2 = 0.0;
      for (i64 k = 0; k < n_raw; ++k) t.s2 = add_rn(t.s2, t.inside(k) ? t.norm1(k) : 0.0);
      if (t.s2 == 0.0) t.s2 = 1.0;
    }
    i64 k0 = 0, k1 = n_raw;
    while (k0 < k1 && t.coeff(k0) == 0.0) ++k0;
    while (k1 > k0 && t.coeff(k1 - 1) == 0.0) --k1;
    if (k0 == k1) continue;
    i64 f = t.base + k0;
    f = f < 0 ? 0 : (f >= n_in ? n_in - 1 : f);
    i64 prev = f, c = 0;
    double acc = t.coeff(k0);
    for (i64 k = k0 + 1; k < k1; ++k) {
      i64 idx = t.base + k;
      idx = idx < 0 ? 0 : (idx >= n_in ? n_in - 1 : idx);
      const double ck = t.coeff(k);
      if (idx == prev) {
        acc = add_rn(acc, ck);
      } else {
        if (c < K) wrow[c] = (W)acc;
        ++c;
        acc = ck;
        prev = idx;
      }
    }
    if (c < K) wrow[c] = (W)acc;
    ++c;
    first[o] = f;
    count[o] = c < K ? c : K;
  }
}

// ------------------------------------------------------------------ apply
// interp.hpp round_saturate: floats are cast; integers rounded half away from zero and
// saturated (NaN -> 0), every step exact.
__device__ __forceinline__ T store_value(W v) {
#if T_INT
  if (v != v) return (T)0;
#if T_BITS == 64
  const W lo = (W)T_MIN, hi = (W)T_MAX;  // hi rounds up to 2^63 / 2^64
  if (!(v > lo)) return (T)T_MIN;
  if (!(v < hi)) return (T)T_MAX;
  T i = (T)v;
  const W d = sub_rn(v, (W)i);
  if (d >= (W)0.5) ++i;
  else if (d <= (W)-0.5) --i;
  return i;
#else
  const W lo = (W)T_MIN, hi = (W)T_MAX;
  v = v > lo ? v : lo;
  v = v < hi ? v : hi;
  i64 i = (i64)v;
  const W d = sub_rn(v, (W)i);
  i += (d >= (W)0.5 ? 1 : 0) - (d <= (W)-0.5 ? 1 : 0);
  i = i < (i64)T_MIN ? (i64)T_MIN : i;
  i = i > (i64)T_MAX ? (i64)T_MAX : i;
  return (T)i;
#endif
#else
  return (T)v;
#endif
}

// x: (B, H, M, Wd, C) with element strides; out: (B, Ho, M, Wo, C) contiguous.
// v_first: the vertical taps are summed first (inside), as the CPU's vertical-first
// order; else the horizontal ones.
extern "C" __global__ void resize2d(const T* x, i64 B, i64 H, i64 M, i64 Wd, i64 C, i64 sB,
                                    i64 sH, i64 sM, i64 sW, i64 sC, const i64* fh,
                                    const i64* ch, const W* wh, i64 Kh, i64 Ho, const i64* fw,
                                    const i64* cw, const W* ww, i64 Kw, i64 Wo, int v_first,
                                    T* out) {
  const i64 total = B * Ho * M * Wo * C;
  for (i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += (i64)blockDim.x * gridDim.x) {
    const i64 c = idx % C;
    i64 t = idx / C;
    const i64 xo = t % Wo;
    t /= Wo;
    const i64 m = t % M;
    t /= M;
    const i64 yo = t % Ho;
    const i64 b = t / Ho;
    const T* plane = x + b * sB + m * sM + c * sC;
    const i64 cy = ch[yo], cx = cw[xo];
    const i64 y0 = fh[yo], x0 = fw[xo];
    const W* wy = wh + yo * Kh;
    const W* wx = ww + xo * Kw;
    W acc = (W)0;
    if (v_first) {
      for (i64 kx = 0; kx < cx; ++kx) {
        const T* col = plane + (x0 + kx) * sW;
        W v = (W)0;
        for (i64 ky = 0; ky < cy; ++ky) {
          const W term = mul_rn(wy[ky], (W)col[(y0 + ky) * sH]);
          v = ky == 0 ? term : add_rn(v, term);
        }
        const W term = mul_rn(wx[kx], v);
        acc = kx == 0 ? term : add_rn(acc, term);
      }
    } else {
      for (i64 ky = 0; ky < cy; ++ky) {
        const T* row = plane + (y0 + ky) * sH;
        W v = (W)0;
        for (i64 kx = 0; kx < cx; ++kx) {
          const W term = mul_rn(wx[kx], (W)row[(x0 + kx) * sW]);
          v = kx == 0 ? term : add_rn(v, term);
        }
        const W term = mul_rn(wy[ky], v);
        acc = ky == 0 ? term : add_rn(acc, term);
      }
    }
    out[idx] = store_value(acc);
  }
}

// out[b, yo, m, xo, c] = x[b, fh[yo], m, fw[xo], c] (element bits; T unsigned)
extern "C" __global__ void nearest2d(const T* x, i64 B, i64 H, i64 M, i64 Wd, i64 C, i64 sB,
                                     i64 sH, i64 sM, i64 sW, i64 sC, const i64* fh, i64 Ho,
                                     const i64* fw, i64 Wo, T* out) {
  const i64 total = B * Ho * M * Wo * C;
  for (i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += (i64)blockDim.x * gridDim.x) {
    const i64 c = idx % C;
    i64 t = idx / C;
    const i64 xo = t % Wo;
    t /= Wo;
    const i64 m = t % M;
    t /= M;
    const i64 yo = t % Ho;
    const i64 b = t / Ho;
    out[idx] = x[b * sB + fh[yo] * sH + m * sM + fw[xo] * sW + c * sC];
  }
}

extern "C" __global__ void round_cast(const W* src, i64 n, T* dst) {
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (i64)blockDim.x * gridDim.x)
    dst[i] = store_value(src[i]);
}

// out (B, m, C) contiguous: out[b, o, :] = value where mask[o] == code (T unsigned)
extern "C" __global__ void fill(T* out, i64 B, i64 m, i64 C, const unsigned char* mask,
                                int code, T value) {
  const i64 total = B * m * C;
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (i64)blockDim.x * gridDim.x) {
    const i64 o = (i / C) % m;
    if (mask[o] == code) out[i] = value;
  }
}
