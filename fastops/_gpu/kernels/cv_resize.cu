// fastops.cv.resize on the GPU: the CPU kernels of fastops/_cpu/include/cv_resize.hpp
// (OpenCV's cv::resize, IPP off) one output element per thread, with the same integer
// arithmetic and the same float operations through round-to-nearest intrinsics (NVRTC
// never contracts them into an FMA): outputs are bit-identical to the CPU's for every
// dtype, and so are the INTER_AREA tables handed to the resize family's kernels.
// Each thread recomputes its own taps from the scales (a few flops), so no table
// crosses from the host.
// Preamble defines:
//   T       element type of the data kernels
//   W       weight type of area_table (float; double for float64 data)
//   T_INT   1 for integer T;  T_MIN, T_MAX its range
//   T_U8    1 for uint8 (resizeAreaFast_ sums in int), T_F64 1 for double

#define CV_TAB_LINEAR 0
#define CV_TAB_CUBIC 1
#define CV_TAB_AREA_LINEAR 2

// ------------------------------------------------------------------ helpers
__device__ __forceinline__ i64 floor_i64(double v) {
  const double big = 9007199254740992.0;  // 2^53
  if (!(v == v)) return 0;
  v = v < -big ? -big : (v > big ? big : v);
  return (i64)floor(v);
}

__device__ __forceinline__ i64 clamp_idx(i64 i, i64 n) { return i < 0 ? 0 : (i >= n ? n - 1 : i); }

// saturate_cast<Out>(float): round half to even (rintf), clamp
__device__ __forceinline__ i64 sat_float(float v, i64 lo, i64 hi) {
  if (!(v > (float)lo)) return lo;
  if (!(v < (float)hi)) return hi;
  return (i64)rintf(v);
}

__device__ __forceinline__ i64 sat_i64(i64 v, i64 lo, i64 hi) { return v < lo ? lo : (v > hi ? hi : v); }

__device__ __forceinline__ T store_float(float v) {
#if T_INT
  return (T)sat_float(v, (i64)T_MIN, (i64)T_MAX);
#else
  return (T)v;
#endif
}

// hal::resize's source index and fraction (cv_resize.hpp gen_coord)
__device__ void gen_coord(i64 d, double scale, double inv_scale, bool area_mode, i64* sx,
                          float* fx) {
  if (!area_mode) {
    const float f = (float)sub_rn(mul_rn(add_rn((double)d, 0.5), scale), 0.5);
    *sx = floor_i64((double)f);
    *fx = sub_rn(f, (float)*sx);
  } else {
    *sx = floor_i64(mul_rn((double)d, scale));
    const float f = (float)sub_rn((double)(d + 1), mul_rn((double)(*sx + 1), inv_scale));
    *fx = f <= 0.f ? 0.f : sub_rn(f, (float)floor_i64((double)f));
  }
}

// interpolateCubic (A = -0.75) in OpenCV's order
__device__ void cubic_coeffs_cv(float x, float* c) {
  const float A = -0.75f;
  const float x1 = add_rn(x, 1.f);
  c[0] = sub_rn(mul_rn(add_rn(mul_rn(sub_rn(mul_rn(A, x1), -3.75f), x1), -6.f), x1), -3.f);
  c[1] = add_rn(mul_rn(mul_rn(sub_rn(mul_rn(1.25f, x), 2.25f), x), x), 1.f);
  const float x2 = sub_rn(1.f, x);
  c[2] = add_rn(mul_rn(mul_rn(sub_rn(mul_rn(1.25f, x2), 2.25f), x2), x2), 1.f);
  c[3] = sub_rn(sub_rn(sub_rn(1.f, c[0]), c[1]), c[2]);
}

__device__ __forceinline__ int q11(float c) { return (int)sat_float(mul_rn(c, 2048.f), -32768, 32767); }

// cv_resize.hpp gen_taps: clamped indices and float32 coefficients; returns the count
__device__ int gen_taps(i64 d, i64 n_in, double scale, double inv_scale, int kind, bool x_rule,
                        i64* idx, float* c) {
  i64 sx;
  float fx;
  gen_coord(d, scale, inv_scale, kind == CV_TAB_AREA_LINEAR, &sx, &fx);
  if (kind == CV_TAB_CUBIC) {
    cubic_coeffs_cv(fx, c);
    for (int k = 0; k < 4; ++k) idx[k] = clamp_idx(sx - 1 + k, n_in);
    return 4;
  }
  if (x_rule) {
    if (sx < 0) { fx = 0.f; sx = 0; }
    if (sx >= n_in - 1) { fx = 0.f; sx = n_in - 1; }
  }
  c[0] = sub_rn(1.f, fx);
  c[1] = fx;
  idx[0] = clamp_idx(sx, n_in);
  idx[1] = clamp_idx(sx + 1, n_in);
  return 2;
}

// ------------------------------------------------------------------ tables
// INTER_NEAREST: min(floor(i * ifx), n_in - 1); INTER_NEAREST_EXACT: OpenCV 5's running
// double sum, sequential by definition (one thread; the tables are one row and one
// column long).
extern "C" __global__ void nn_table(i64 n_in, i64 n_out, double ifx, int exact, i64* idx) {
  if (exact) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    const double scale = div_rn((double)n_in, (double)n_out);
    double f = mul_rn(scale, 0.5);
    for (i64 i = 0; i < n_out; ++i) {
      idx[i] = clamp_idx(floor_i64(f), n_in);
      f = add_rn(f, scale);
    }
    return;
  }
  for (i64 i = (i64)blockIdx.x * blockDim.x + threadIdx.x; i < n_out;
       i += (i64)blockDim.x * gridDim.x)
    idx[i] = clamp_idx(floor_i64(mul_rn((double)i, ifx)), n_in);
}

// cv_resize.hpp area_row (computeResizeAreaTab's cell), one thread per output index
extern "C" __global__ void area_table(i64 n_in, i64 n_out, double scale, i64 K, i64* first,
                                      i64* count, W* weights) {
  for (i64 d = (i64)blockIdx.x * blockDim.x + threadIdx.x; d < n_out;
       d += (i64)blockDim.x * gridDim.x) {
    W* row = weights + d * K;
    for (i64 k = 0; k < K; ++k) row[k] = (W)0;
    const double fsx1 = mul_rn((double)d, scale);
    const double fsx2 = add_rn(fsx1, scale);
    const double rem = sub_rn((double)n_in, fsx1);
    const double cell = scale < rem ? scale : rem;
    i64 sx1 = floor_i64(ceil(fsx1)), sx2 = floor_i64(fsx2);
    sx2 = sx2 < n_in - 1 ? sx2 : n_in - 1;
    sx1 = sx1 < sx2 ? sx1 : sx2;
    i64 f0 = -1, cnt = 0;
    if (sub_rn((double)sx1, fsx1) > 1e-3) {
      f0 = sx1 - 1;
      if (cnt < K) row[cnt++] = (W)(float)div_rn(sub_rn((double)sx1, fsx1), cell);
    }
    for (i64 s = sx1; s < sx2 && cnt < K; ++s) {
      if (cnt == 0) f0 = s;
      if (s == f0 + cnt) row[cnt++] = (W)(float)div_rn(1.0, cell);
    }
    const double over = sub_rn(fsx2, (double)sx2);
    if (over > 1e-3) {
      if (cnt == 0) f0 = sx2;
      double a = over < 1.0 ? over : 1.0;
      a = a < cell ? a : cell;
      if (cnt < K && sx2 == f0 + cnt) row[cnt++] = (W)(float)div_rn(a, cell);
    }
    if (cnt == 0 || f0 < 0 || f0 + cnt > n_in) {
      for (i64 k = 0; k < K; ++k) row[k] = (W)0;
      f0 = 0;
      cnt = 0;
    }
    first[d] = f0;
    count[d] = cnt;
  }
}

// ------------------------------------------------------------------ uint8 fixed point
// INTER_LINEAR / INTER_CUBIC / INTER_AREA upscaling on uint8 (cv_resize_fixed): one
// thread per output element; the horizontal sums of the K source rows in int32, then the
// vertical pass of OpenCV's VResizeLinear / VResizeCubic (float32 for the elements its
// 8-lane loop covers, integers for the row's tail).
extern "C" __global__ void resize_fixed(const T* x, i64 h, i64 w, i64 C, i64 rs,
                                        double scale_x, double inv_x, double scale_y,
                                        double inv_y, int interp, T* out, i64 dh, i64 dw) {
  const int kind = interp == 2 ? CV_TAB_CUBIC : (interp == 3 ? CV_TAB_AREA_LINEAR : CV_TAB_LINEAR);
  const int K = kind == CV_TAB_CUBIC ? 4 : 2;
  const i64 Lout = dw * C;
  const i64 total = dh * Lout;
  const i64 nv = (Lout / 8) * 8;
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (i64)blockDim.x * gridDim.x) {
    const i64 yo = e / Lout, j = e - yo * Lout, xo = j / C, c = j - xo * C;
    i64 xi[4];
    float xc[4];
    gen_taps(xo, w, scale_x, inv_x, kind, true, xi, xc);
    int a[4];
    for (int k = 0; k < K; ++k) a[k] = q11(xc[k]);
    if (K == 2 && xi[1] == xi[0]) { a[0] = 2048; a[1] = 0; }
    i64 sy;
    float fy;
    gen_coord(yo, scale_y, inv_y, kind == CV_TAB_AREA_LINEAR, &sy, &fy);
    float yc[4];
    if (kind == CV_TAB_CUBIC) {
      cubic_coeffs_cv(fy, yc);
    } else {
      yc[0] = sub_rn(1.f, fy);
      yc[1] = fy;
    }
    int Hs[4], b[4];
    for (int k = 0; k < K; ++k) {
      b[k] = q11(yc[k]);
      const T* S = x + clamp_idx(sy - K / 2 + 1 + k, h) * rs;
      int acc = 0;
      for (int t = 0; t < K; ++t) acc += a[t] * (int)S[xi[t] * C + c];
      Hs[k] = acc;
    }
    i64 v;
    if (K == 2) {
      v = (((b[0] * (Hs[0] >> 4)) >> 16) + ((b[1] * (Hs[1] >> 4)) >> 16) + 2) >> 2;
      v = sat_i64(v, 0, 255);
    } else if (j < nv) {
      const float scale = 1.f / (2048.f * 2048.f);
      float acc = mul_rn((float)Hs[3], mul_rn((float)b[3], scale));
      acc = add_rn(mul_rn((float)Hs[2], mul_rn((float)b[2], scale)), acc);
      acc = add_rn(mul_rn((float)Hs[1], mul_rn((float)b[1], scale)), acc);
      acc = add_rn(mul_rn((float)Hs[0], mul_rn((float)b[0], scale)), acc);
      v = sat_float(acc, 0, 255);
    } else {
      i64 acc = 0;
      for (int k = 0; k < 4; ++k) acc += (i64)b[k] * Hs[k];
      v = sat_i64((acc + (1 << 21)) >> 22, 0, 255);
    }
    out[e] = (T)v;
  }
}

// ------------------------------------------------------------------ float arithmetic
// cv_resize_float: INTER_LINEAR / INTER_CUBIC / INTER_AREA-upscale of uint16, int16,
// float32 and float64 images in OpenCV's float operations and order (WT float; double
// for double): horizontal sums (a linear tap past the last sample is S * 1; cubic border
// pixels start from 0 + ...), the vertical sum in tap order except the elements of
// OpenCV's cubic vector loop (4 float32 / 8 16-bit lanes), summed from the last tap.
#if T_F64
typedef double FWT;
#else
typedef float FWT;
#endif

extern "C" __global__ void resize_float(const T* x, i64 h, i64 w, i64 C, i64 rs,
                                        double scale_x, double inv_x, double scale_y,
                                        double inv_y, int interp, T* out, i64 dh, i64 dw) {
  const int kind = interp == 2 ? CV_TAB_CUBIC : (interp == 3 ? CV_TAB_AREA_LINEAR : CV_TAB_LINEAR);
  const int K = kind == CV_TAB_CUBIC ? 4 : 2;
  const i64 Lout = dw * C;
  const i64 total = dh * Lout;
  const i64 lanes = T_F64 ? 0 : (T_INT ? 8 : 4);
  const i64 nv = lanes ? (Lout / lanes) * lanes : 0;
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (i64)blockDim.x * gridDim.x) {
    const i64 yo = e / Lout, j = e - yo * Lout, xo = j / C, c = j - xo * C;
    i64 xi[4];
    float xc[4];
    gen_taps(xo, w, scale_x, inv_x, kind, true, xi, xc);
    const int n = (K == 2 && xi[1] == xi[0]) ? 1 : K;
    bool zero_first = false;
    if (K == 4) {
      i64 sx;
      float fx;
      gen_coord(xo, scale_x, inv_x, false, &sx, &fx);
      zero_first = !(sx >= 1 && sx + 2 < w);
    }
    i64 sy;
    float fy;
    gen_coord(yo, scale_y, inv_y, kind == CV_TAB_AREA_LINEAR, &sy, &fy);
    float yc[4];
    if (kind == CV_TAB_CUBIC) {
      cubic_coeffs_cv(fy, yc);
    } else {
      yc[0] = sub_rn(1.f, fy);
      yc[1] = fy;
    }
    FWT Hs[4];
    for (int k = 0; k < K; ++k) {
      const T* S = x + clamp_idx(sy - K / 2 + 1 + k, h) * rs;
      FWT acc = mul_rn((FWT)S[xi[0] * C + c], (FWT)xc[0]);
      if (zero_first) acc = add_rn((FWT)0, acc);
      for (int t = 1; t < n; ++t) acc = add_rn(acc, mul_rn((FWT)S[xi[t] * C + c], (FWT)xc[t]));
      Hs[k] = acc;
    }
    FWT v;
    if (K == 2) {
      v = add_rn(mul_rn(Hs[0], (FWT)yc[0]), mul_rn(Hs[1], (FWT)yc[1]));
    } else if (j < nv) {
      v = add_rn(mul_rn(Hs[0], (FWT)yc[0]),
                 add_rn(mul_rn(Hs[1], (FWT)yc[1]),
                        add_rn(mul_rn(Hs[2], (FWT)yc[2]), mul_rn(Hs[3], (FWT)yc[3]))));
    } else {
      v = mul_rn(Hs[0], (FWT)yc[0]);
      for (int k = 1; k < 4; ++k) v = add_rn(v, mul_rn(Hs[k], (FWT)yc[k]));
    }
#if T_INT
    out[e] = (T)sat_float((float)v, (i64)T_MIN, (i64)T_MAX);
#else
    out[e] = (T)v;
#endif
  }
}

// ------------------------------------------------------------------ INTER_LINEAR_EXACT
// resize_bitExact: coefficients round(frac * 2^bits) from IEEE-double coordinates;
// exact integer sums (64-bit here: the CPU's narrower types never overflow, so the
// values are the same), rounded (v + 2^(2 bits - 1)) >> 2 bits.
__device__ void exact_coeffs(i64 d, i64 n_in, double scale, int bits, i64* idx, i64* c0,
                             i64* c1) {
  const i64 one = (i64)1 << bits;
  const double fval = sub_rn(mul_rn(scale, add_rn((double)d, 0.5)), 0.5);
  const i64 ival = floor_i64(fval);
  if (ival >= 0 && n_in > 1) {
    if (ival < n_in - 1) {
      *c1 = (i64)rint(mul_rn(sub_rn(fval, (double)ival), (double)one));
      *c0 = one - *c1;
      *idx = ival;
      return;
    }
    *idx = n_in - 1;
  } else {
    *idx = 0;
  }
  *c0 = one;
  *c1 = 0;
}

extern "C" __global__ void resize_exact(const T* x, i64 h, i64 w, i64 C, i64 rs,
                                        double scale_x, double scale_y, T* out, i64 dh,
                                        i64 dw) {
  const int bits = sizeof(T) == 1 ? 8 : 16;
  const i64 Lout = dw * C;
  const i64 total = dh * Lout;
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (i64)blockDim.x * gridDim.x) {
    const i64 yo = e / Lout, j = e - yo * Lout, xo = j / C, c = j - xo * C;
    i64 xi, a0, a1, yi, b0, b1;
    exact_coeffs(xo, w, scale_x, bits, &xi, &a0, &a1);
    exact_coeffs(yo, h, scale_y, bits, &yi, &b0, &b1);
    const i64 x0 = xi * C + c, x1 = (xi + 1 < w ? xi + 1 : w - 1) * C + c;
    const T* S0 = x + yi * rs;
    const T* S1 = x + (yi + 1 < h ? yi + 1 : h - 1) * rs;
    const i64 H0 = a0 * (i64)S0[x0] + a1 * (i64)S0[x1];
    const i64 H1 = a0 * (i64)S1[x0] + a1 * (i64)S1[x1];
    const i64 v = (b0 * H0 + b1 * H1 + ((i64)1 << (2 * bits - 1))) >> (2 * bits);
#if T_INT
    out[e] = (T)sat_i64(v, (i64)T_MIN, (i64)T_MAX);
#else
    out[e] = (T)v;
#endif
  }
}

// ------------------------------------------------------------------ INTER_AREA
// resizeAreaFast_ (integer factors), one thread per output element, the CPU's rules:
// 2x2 cells of 1/3/4-channel integer images (a+b+c+d+2) >> 2; float32 2x2 cells of 1
// channel (the first multiple of 4 outputs) and 4 channels ((a+b)+(c+d)) * 0.25f; else
// the sum in OpenCV's order (groups of 4 in int / T, accumulated in WT: int for uint8,
// float for 16-bit and float, double for double) times 1 / area; border cells
// (float)sum / count.
#if T_F64
typedef double AWT;
#else
typedef float AWT;
#endif

extern "C" __global__ void area_fast(const T* x, i64 h, i64 w, i64 C, i64 rs, i64 isx,
                                     i64 isy, T* out, i64 dh, i64 dw) {
  if (isx < 1 || isy < 1) return;  // (the caller's invariants)
  const i64 Lout = dw * C;
  const i64 total = dh * Lout;
  const i64 area = isx * isy;
  const float scale = div_rn(1.f, (float)area);
  const i64 full_w = (w / isx < dw) ? w / isx : dw;
  const bool int2x2 = isx == 2 && isy == 2 && (C == 1 || C == 3 || C == 4) && T_INT;
  const bool f32x2 = isx == 2 && isy == 2 && !T_INT && !T_F64 && (C == 1 || C == 4);
  const i64 f32_simd = C == 4 ? full_w : (full_w / 4) * 4;
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (i64)blockDim.x * gridDim.x) {
    const i64 dy = e / Lout, j = e - dy * Lout, dx = j / C, c = j - dx * C;
    const i64 sy0 = dy * isy, sx0 = dx * isx;
    if (sy0 >= h) {
      out[e] = (T)0;
      continue;
    }
    const bool full = sy0 + isy <= h && dx < full_w;
    if (full) {
      const T* S = x + sy0 * rs + sx0 * C + c;
      const T* S1 = x + (sy0 + 1 < h ? sy0 + 1 : sy0) * rs + sx0 * C + c;
      if (int2x2) {
        const i64 s = (i64)S[0] + (i64)S[C] + (i64)S1[0] + (i64)S1[C];
        out[e] = (T)((s + 2) >> 2);
        continue;
      }
      if (f32x2 && dx < f32_simd) {
        const float s = add_rn(add_rn((float)S[0], (float)S[C]), add_rn((float)S1[0], (float)S1[C]));
        out[e] = (T)mul_rn(s, 0.25f);
        continue;
      }
#if T_U8
      int sum = 0;
#else
      AWT sum = (AWT)0;
#endif
      i64 k = 0;
      for (; k + 4 <= area; k += 4) {
        AWT g[4];
        for (int q = 0; q < 4; ++q) {
          const i64 kk = k + q;
          g[q] = (AWT)x[(sy0 + kk / isx) * rs + (sx0 + kk % isx) * C + c];
        }
#if T_INT
        // 8/16-bit element sums are exact integers (no rounding in any order)
        sum += (int)g[0] + (int)g[1] + (int)g[2] + (int)g[3];
#else
        sum = add_rn(sum, add_rn(add_rn(add_rn(g[0], g[1]), g[2]), g[3]));
#endif
      }
      for (; k < area; ++k) {
        const T v = x[(sy0 + k / isx) * rs + (sx0 + k % isx) * C + c];
#if T_U8
        sum += (int)v;
#else
        sum = add_rn(sum, (AWT)v);
#endif
      }
#if T_F64
      out[e] = (T)mul_rn(sum, (double)scale);
#else
      out[e] = store_float(mul_rn((float)sum, scale));
#endif
      continue;
    }
#if T_U8
    int sum = 0;
#else
    AWT sum = (AWT)0;
#endif
    i64 count = 0;
    for (i64 sy = 0; sy < isy && sy0 + sy < h; ++sy)
      for (i64 sx = 0; sx < isx && sx0 + sx < w; ++sx) {
        const T v = x[(sy0 + sy) * rs + (sx0 + sx) * C + c];
#if T_U8
        sum += (int)v;
#else
        sum = add_rn(sum, (AWT)v);
#endif
        ++count;
      }
    out[e] = count ? store_float(div_rn((float)sum, (float)count)) : (T)0;
  }
}

// resizeArea_ for integer images (cv_area): tables (first, count, float weights) from
// area_table; per output element: for each source row, b = 0 + S * alpha ...
// over its taps, acc = beta0 * b0 + beta1 * b1 + ..., rounded half to even.
extern "C" __global__ void area(const T* x, i64 h, i64 w, i64 C, i64 rs, const i64* fy,
                                const i64* cy, const float* wy, i64 Ky, const i64* fx,
                                const i64* cx, const float* wx, i64 Kx, T* out, i64 dh,
                                i64 dw) {
  const i64 Lout = dw * C;
  const i64 total = dh * Lout;
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (i64)blockDim.x * gridDim.x) {
    const i64 yo = e / Lout, j = e - yo * Lout, xo = j / C, c = j - xo * C;
    const i64 f = clamp_idx(fy[yo], h);
    i64 cnt = cy[yo] < Ky ? cy[yo] : Ky;
    cnt = cnt < h - f ? cnt : h - f;
    const i64 g = clamp_idx(fx[xo], w);
    i64 n = cx[xo] < Kx ? cx[xo] : Kx;
    n = n < w - g ? n : w - g;
    float acc = 0.f;
    for (i64 k = 0; k < cnt; ++k) {
      const T* S = x + (f + k) * rs + g * C + c;
      const float* a = wx + xo * Kx;
      float b = 0.f;
      for (i64 t = 0; t < n; ++t) b = add_rn(b, mul_rn((float)S[t * C], a[t]));
      const float beta = wy[yo * Ky + k];
      acc = k == 0 ? mul_rn(beta, b) : add_rn(acc, mul_rn(beta, b));
    }
    out[e] = cnt > 0 ? store_float(acc) : (T)0;
  }
}
