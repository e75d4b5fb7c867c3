// Grid sampling (ONNX GridSample 16/20/22, MMCV grid_sampler, torch grid_sample forward).
//
// x is (N, C, H, W) or (N, C, D, H, W), read through element strides; grid is
// (N, Ho, Wo, 2) or (N, Do, Ho, Wo, 3) in the compute type T, read through element
// strides; out is C-contiguous (N, C, Ho, Wo) / (N, C, Do, Ho, Wo) of x's element type.
//
// Plan, then apply.  A work item is (image n, a chunk of consecutive output points).
// Its plan holds, per output point, the taps' element offsets with the padding folded
// in (border clamps, reflection reflects, zeros points an outside tap at a safe element
// and clears its mask) and the weights.  It is computed once and applied to all C
// channels, kGsCB channels per pass so that each plan entry is read once per block.
// Points whose taps are all inside get compact unmasked entries (see "plan entries");
// float bicubic uses SSE2 with the scalar order of operations.  Items run on parallel_for
// threads, so one image uses every core (torch parallelizes over N only, ONNX Runtime
// over C); every output element is one fixed sequence of operations, so results do not
// depend on the thread count, the chunking or the SSE path.
//
// Numerics follow torch's CPU kernels operation for operation: 4-D inputs the
// vectorized kernel (aten/src/ATen/native/cpu/GridSamplerKernel.cpp: unnormalize as
// (g + 1) * (size / 2) - 0.5, reflection by trunc, corner weights (1 - dx) * (1 - dy)...,
// bicubic A = -0.75 with padding applied to each tap), 5-D inputs the scalar kernel
// (aten/src/ATen/native/GridSampler.{h,cpp}: ((g + 1) * size - 1) / 2, reflection by
// fmod, weights (x0 + 1 - x) * (y0 + 1 - y) * (z0 + 1 - z)...).  An outside tap
// contributes exactly 0, as torch's masked gathers do (not 0 * value, which would be
// NaN next to an infinite pixel).  NaN coordinates follow torch's 4-D rule for both
// ranks: border/reflection clamp NaN to 0; with zeros padding every tap is outside and
// the (NaN) weights make linear/cubic samples NaN, nearest samples 0.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "parallel.hpp"
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__AVX2__)
#include <immintrin.h>
#endif

#include "common.hpp"
#include "interp.hpp"

// GPU results are bit-identical to these (kernels/grid_sample.cu uses _rn intrinsics):
// never contract a*b+c into an FMA, even with -march=native.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("fp-contract=off")
#elif defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#endif

namespace fastops {
namespace gs {

// torch / MMCV enum values
enum Mode : int { kBilinear = 0, kNearest = 1, kBicubic = 2 };
enum Pad : int { kZeros = 0, kBorder = 1, kReflection = 2 };

// Channels that share one pass over a chunk's plan.  Measured on fastops._bench.grid_sample
// (1 thread, CPU time, noisy 2-core machine): bilinear 20 ms with 1, 2 or 4 channels,
// 34 ms with 8 (8 planes of 64 KiB crowd the 512 KiB L2); nearest 8 ms with 4, 13 with 1.
// C % 4 leftover channels go in one pass of C % 4 (apply_window): one pass per leftover
// channel made the 3-channel STN workload 1.4x slower than 4 channels.
constexpr int kGsCB = 4;
// Plan bytes per thread.  Random grids read every input plane once per chunk, so chunks
// are as large as memory sensibly allows (the plan streams through the cache):
// bilinear 38 ms with 256 KiB plans (4 chunks per 128 x 128 image), 20 ms with 1-4 MiB.
constexpr int64_t kGsPlanBytes = int64_t(1) << 21;
// ... and at most this much for all threads together (many-core machines).
constexpr int64_t kGsPlanTotal = int64_t(1) << 25;

// Geometry of one call (element strides; 2-D inputs have D = Do = 1 and zero D strides).
struct Shape {
  int64_t N, C;
  int64_t D, H, W;                  // input extents, all >= 1
  int64_t sN, sC, sD, sH, sW;       // x element strides
  int64_t Do, Ho, Wo;               // output extents
  int64_t gN, gD, gH, gW, gK;       // grid element strides (gK: between x, y, z)
};

// ---------------------------------------------------------------- scalar helpers
// Unsigned integer of T's size: a tap mask is all ones (inside) or 0 (outside).
template <typename T>
using bits_t = typename std::conditional<sizeof(T) == 4, uint32_t, uint64_t>::type;

template <typename T>
inline T and_bits(T v, bits_t<T> m) {
  bits_t<T> b;
  std::memcpy(&b, &v, sizeof b);
  b &= m;
  std::memcpy(&v, &b, sizeof b);
  return v;
}

template <typename T>
constexpr bits_t<T> kAll = ~bits_t<T>(0);

// ---------------------------------------------------------------- coordinates
// unnormalize / clip / reflect one coordinate of one axis,
// torch's rules.  Vec4d selects the 4-D (vectorized kernel) order of operations, else
// the 5-D (scalar kernel) one.
template <typename T, bool Vec4d>
struct Axis {
  int64_t size;
  T max_val;      // size - 1
  T scale;        // 4-D unnormalize factor: (size - 1) / 2 or size / 2
  T low, tspan;   // 4-D reflection: about low and low + tspan / 2
  T rmin, rspan;  // 5-D reflection: about rmin and rmin + rspan
  bool align, flat;  // flat: a reflection span of 0 (align_corners and size 1) -> 0

  Axis(int64_t n, bool align_corners) : size(n), align(align_corners) {
    max_val = static_cast<T>(n - 1);
    if (Vec4d) {
      scale = align ? static_cast<T>(n - 1) / T(2) : static_cast<T>(n) / T(2);
      low = align ? T(0) : T(-0.5);
      tspan = align ? static_cast<T>(n - 1) * T(2) : static_cast<T>(n) * T(2);
      rmin = rspan = T(0);
    } else {
      const int64_t tlo = align ? 0 : -1, thi = align ? 2 * (n - 1) : 2 * n - 1;
      rmin = static_cast<T>(tlo) / T(2);
      rspan = static_cast<T>(thi - tlo) / T(2);
      scale = low = tspan = T(0);
    }
    flat = align && n <= 1;
  }

  T unnormalize(T g) const {
    if (Vec4d) return align ? (g + T(1)) * scale : (g + T(1)) * scale - T(0.5);
    return align ? ((g + T(1)) / T(2)) * max_val
                 : ((g + T(1)) * static_cast<T>(size) - T(1)) / T(2);
  }

  // Into [0, size - 1]; NaN -> 0 (torch's 4-D clamp order; its 5-D kernel gives size - 1).
  T clip(T v) const {
    const T r = v > T(0) ? v : T(0);
    return r < max_val ? r : max_val;
  }

  T reflect(T v) const {
    if (flat) return T(0);
    if (Vec4d) {
      const T a = align ? std::fabs(v) : std::fabs(v - low);
      const T flips = exact_trunc(a / tspan);
      const T extra = a - flips * tspan;
      const T other = tspan - extra;
      const T r = extra < other ? extra : other;  // NaN stays NaN (clip makes it 0)
      return align ? r : r + low;
    }
    const T a = std::fabs(v - rmin);
    const T extra = std::fmod(a, rspan);
    const T q = exact_floor(a / rspan);
    // torch: int(q) % 2; a q beyond int range converts to INT_MIN on x86 (even)
    const bool odd = q < T(2147483648.0) && (static_cast<int64_t>(q) & 1);
    return odd ? rspan - extra + rmin : extra + rmin;
  }

  // The padded continuous coordinate (bilinear, nearest).
  T source(T g, int pad) const {
    T v = unnormalize(g);
    if (pad == kBorder) return clip(v);
    if (pad == kReflection) return clip(reflect(v));
    return v;
  }

  // A padded integer-valued tap coordinate (bicubic).
  T tap(T v, int pad) const {
    if (pad == kBorder) return clip(v);
    if (pad == kReflection) return clip(reflect(v));
    return v;
  }
};

// The element offset and mask of integer-valued coordinate v along an axis: outside
// [0, size) (or NaN) gives offset 0 and mask 0.  Exact integer tests after a guarded
// conversion, so no value of v can index out of bounds.
template <typename T>
inline void tap_at(T v, int64_t size, int64_t stride, int64_t& off, bits_t<T>& m) {
  if (v >= T(0) && v <= static_cast<T>(size)) {
    const int64_t i = static_cast<int64_t>(v);
    if (i < size) {
      off = i * stride;
      m = kAll<T>;
      return;
    }
  }
  off = 0;
  m = 0;
}

// The two linear taps floor(v), floor(v) + 1 along an axis.
template <typename T>
struct LinAxis {
  int64_t o0, o1;
  bits_t<T> m0, m1;
  T f;  // floor(v)
};

template <typename T>
inline LinAxis<T> lin_axis(T v, int64_t size, int64_t stride) {
  LinAxis<T> a;
  a.o0 = a.o1 = 0;
  a.m0 = a.m1 = 0;
  if (!(v >= T(-1) && v < static_cast<T>(size))) {  // both taps outside (or NaN)
    a.f = exact_floor(v);
    return a;
  }
  // floor(v) in [-1, size - 1] from one conversion (exact_floor's steps, -0 kept)
  int64_t i = static_cast<int64_t>(v);
  a.f = std::copysign(static_cast<T>(i), v);
  if (a.f > v) {
    a.f -= T(1);
    --i;
  }
  if (i >= 0 && i < size) {
    a.o0 = i * stride;
    a.m0 = kAll<T>;
  }
  if (i + 1 < size) {  // i + 1 >= 0
    a.o1 = (i + 1) * stride;
    a.m1 = kAll<T>;
  }
  return a;
}

// ---------------------------------------------------------------- plan entries
// A chunk's plan is split by point.  An "inside" point has every tap inside x with the
// taps of each axis consecutive (no padding applied): its compact entry holds the offset
// of its first tap and its weights, and the taps are read unmasked.  An "edge" point
// holds every tap's offset and mask.  Both carry p, the point's index in the chunk.
// Entries are grouped per window of kGsWin consecutive points (the window's inside
// entries, then its edge entries), so the outputs of a window stay in L1 while both
// lists fill them.  Masks cost 23 -> 14 instructions per bilinear output and 127 -> 76
// per bicubic one (callgrind); on the benchmark grid (U(-1.1, 1.1), 128 x 128) about 80%
// of the points are inside.
constexpr int64_t kGsWin = 256;

template <typename T>
struct NearIn {
  int64_t o;
  int32_t p;
};
struct NearOut {  // the tap is outside ("zeros"): the sample is 0
  int32_t p;
};
template <typename T>
struct Lin2In {  // taps o, o + sW, o + sH, o + sH + sW
  int64_t o;
  T w[4];
  int32_t p;
};
template <typename T>
struct Lin2Out {  // taps nw, ne, sw, se
  int64_t o[4];
  bits_t<T> m[4];
  T w[4];
  int32_t p;
};
template <typename T>
struct Cub2In {  // taps o + i * sH + j * sW
  int64_t o;
  T cx[4], cy[4];
  int32_t p;
};
template <typename T>
struct Cub2Out {  // taps yo[i] + xo[j]
  int64_t xo[4], yo[4];
  bits_t<T> xm[4], ym[4];
  T cx[4], cy[4];
  int32_t p;
};
template <typename T>
struct Lin3In {  // taps o + dz * sD + dy * sH + dx * sW in the order below
  int64_t o;
  T w[8];
  int32_t p;
};
template <typename T>
struct Lin3Out {  // taps tnw, tne, tsw, tse, bnw, bne, bsw, bse
  int64_t o[8];
  bits_t<T> m[8];
  T w[8];
  int32_t p;
};

// One thread's plan of one chunk: entries and per-window start indices.
template <typename In, typename Out>
struct Split {
  In* in;
  Out* out;
  int64_t* wi;  // window w's inside entries: in[wi[w] .. wi[w + 1])
  int64_t* wo;  // its edge entries: out[wo[w] .. wo[w + 1])
  int64_t ni, no;
  In& add_in(int64_t r) {
    In& e = in[ni++];
    e.p = static_cast<int32_t>(r);
    return e;
  }
  Out& add_out(int64_t r) {
    Out& e = out[no++];
    e.p = static_cast<int32_t>(r);
    return e;
  }
};

// Grid values of output point p (flattened over the output extents) of image n.
template <typename T>
struct GridWalk {
  const T* base;
  const T* q;  // the current point's grid values
  const Shape& s;
  int64_t d, h, w;
  GridWalk(const T* grid, const Shape& sh, int64_t n, int64_t p) : s(sh) {
    base = grid + n * sh.gN;
    w = p % sh.Wo;
    const int64_t t = p / sh.Wo;
    h = t % sh.Ho;
    d = t / sh.Ho;
    q = base + d * s.gD + h * s.gH + w * s.gW;
  }
  const T* at() const { return q; }
  void next() {
    q += s.gW;
    if (++w == s.Wo) {
      w = 0;
      if (++h == s.Ho) {
        h = 0;
        ++d;
      }
      q = base + d * s.gD + h * s.gH;
    }
  }
};

// Plan points p0 .. p1 - 1 of image n: point(r, q, sp) adds point r's entry (q: its grid
// values) to sp.
template <typename T, typename In, typename Out, typename PointFn>
inline void plan_points(const T* grid, const Shape& s, int64_t n, int64_t p0, int64_t p1,
                        Split<In, Out>& sp, PointFn point) {
  GridWalk<T> g(grid, s, n, p0);
  sp.ni = sp.no = 0;
  const int64_t np = p1 - p0;
  for (int64_t r = 0; r < np; ++r, g.next()) {
    if (r % kGsWin == 0) {
      sp.wi[r / kGsWin] = sp.ni;
      sp.wo[r / kGsWin] = sp.no;
    }
    point(r, g.at(), sp);
  }
  const int64_t nw = (np + kGsWin - 1) / kGsWin;
  sp.wi[nw] = sp.ni;
  sp.wo[nw] = sp.no;
}

// ---------------------------------------------------------------- planning
template <typename T>
void plan_nearest2(const T* grid, const Shape& s, int64_t n, int64_t p0, int64_t p1, int pad,
                   bool align, Split<NearIn<T>, NearOut>& sp) {
  const Axis<T, true> ax(s.W, align), ay(s.H, align);
  plan_points(grid, s, n, p0, p1, sp, [&](int64_t r, const T* q, Split<NearIn<T>, NearOut>& o) {
    const T gx = q[0], gy = q[s.gK];
    int64_t ox, oy;
    bits_t<T> mx, my;
    tap_at(exact_rint(ax.source(gx, pad)), s.W, s.sW, ox, mx);
    tap_at(exact_rint(ay.source(gy, pad)), s.H, s.sH, oy, my);
    if ((mx & my) || pad != kZeros) o.add_in(r).o = oy + ox;  // border/reflection: inside
    else o.add_out(r);
  });
}

template <typename T>
void plan_nearest3(const T* grid, const Shape& s, int64_t n, int64_t p0, int64_t p1, int pad,
                   bool align, Split<NearIn<T>, NearOut>& sp) {
  const Axis<T, false> ax(s.W, align), ay(s.H, align), az(s.D, align);
  plan_points(grid, s, n, p0, p1, sp, [&](int64_t r, const T* q, Split<NearIn<T>, NearOut>& o) {
    const T gx = q[0], gy = q[s.gK], gz = q[2 * s.gK];
    int64_t ox, oy, oz;
    bits_t<T> mx, my, mz;
    tap_at(exact_rint(ax.source(gx, pad)), s.W, s.sW, ox, mx);
    tap_at(exact_rint(ay.source(gy, pad)), s.H, s.sH, oy, my);
    tap_at(exact_rint(az.source(gz, pad)), s.D, s.sD, oz, mz);
    if ((mx & my & mz) || pad != kZeros) o.add_in(r).o = oz + oy + ox;
    else o.add_out(r);
  });
}

template <typename T>
void plan_linear2(const T* grid, const Shape& s, int64_t n, int64_t p0, int64_t p1, int pad,
                  bool align, Split<Lin2In<T>, Lin2Out<T>>& sp) {
  const Axis<T, true> ax(s.W, align), ay(s.H, align);
  plan_points(grid, s, n, p0, p1, sp, [&](int64_t r, const T* q,
                                          Split<Lin2In<T>, Lin2Out<T>>& o) {
    const T gx = q[0], gy = q[s.gK];
    const T x = ax.source(gx, pad), y = ay.source(gy, pad);
    const LinAxis<T> a = lin_axis(x, s.W, s.sW), b = lin_axis(y, s.H, s.sH);
    const T wx = x - a.f, ex = T(1) - wx;  // torch: w = x - x_w, e = 1 - w
    const T ny = y - b.f, sy = T(1) - ny;  //        n = y - y_n, s = 1 - n
    const T w0 = sy * ex, w1 = sy * wx, w2 = ny * ex, w3 = ny * wx;
    if (a.m0 & a.m1 & b.m0 & b.m1) {
      Lin2In<T>& e = o.add_in(r);
      e.o = b.o0 + a.o0;
      e.w[0] = w0, e.w[1] = w1, e.w[2] = w2, e.w[3] = w3;
    } else {
      Lin2Out<T>& e = o.add_out(r);
      e.w[0] = w0, e.w[1] = w1, e.w[2] = w2, e.w[3] = w3;
      e.o[0] = b.o0 + a.o0, e.o[1] = b.o0 + a.o1, e.o[2] = b.o1 + a.o0, e.o[3] = b.o1 + a.o1;
      e.m[0] = b.m0 & a.m0, e.m[1] = b.m0 & a.m1, e.m[2] = b.m1 & a.m0, e.m[3] = b.m1 & a.m1;
    }
  });
}

template <typename T>
void plan_linear3(const T* grid, const Shape& s, int64_t n, int64_t p0, int64_t p1, int pad,
                  bool align, Split<Lin3In<T>, Lin3Out<T>>& sp) {
  const Axis<T, false> ax(s.W, align), ay(s.H, align), az(s.D, align);
  plan_points(grid, s, n, p0, p1, sp, [&](int64_t r, const T* q,
                                          Split<Lin3In<T>, Lin3Out<T>>& o) {
    const T gx = q[0], gy = q[s.gK], gz = q[2 * s.gK];
    const T x = ax.source(gx, pad), y = ay.source(gy, pad), z = az.source(gz, pad);
    const LinAxis<T> a = lin_axis(x, s.W, s.sW), b = lin_axis(y, s.H, s.sH),
                     c = lin_axis(z, s.D, s.sD);
    // torch: tnw = (ix_bse - ix) * (iy_bse - iy) * (iz_bse - iz), ...
    const T ex = (a.f + T(1)) - x, wx = x - a.f;
    const T ey = (b.f + T(1)) - y, wy = y - b.f;
    const T ez = (c.f + T(1)) - z, wz = z - c.f;
    const T w[8] = {ex * ey * ez, wx * ey * ez, ex * wy * ez, wx * wy * ez,
                    ex * ey * wz, wx * ey * wz, ex * wy * wz, wx * wy * wz};
    if (a.m0 & a.m1 & b.m0 & b.m1 & c.m0 & c.m1) {
      Lin3In<T>& e = o.add_in(r);
      e.o = c.o0 + b.o0 + a.o0;
      for (int k = 0; k < 8; ++k) e.w[k] = w[k];
    } else {
      Lin3Out<T>& e = o.add_out(r);
      const int64_t zo[2] = {c.o0, c.o1}, yo[2] = {b.o0, b.o1}, xo[2] = {a.o0, a.o1};
      const bits_t<T> zm[2] = {c.m0, c.m1}, ym[2] = {b.m0, b.m1}, xm[2] = {a.m0, a.m1};
      for (int k = 0; k < 8; ++k) {
        const int iz = k >> 2, iy = (k >> 1) & 1, ix = k & 1;
        e.w[k] = w[k];
        e.o[k] = zo[iz] + yo[iy] + xo[ix];
        e.m[k] = zm[iz] & ym[iy] & xm[ix];
      }
    }
  });
}

// One axis of a bicubic sample: the four taps floor(v) - 1 .. floor(v) + 2 with padding
// applied to each, their offsets and masks, the weights.  Returns whether the four taps
// are inside and unpadded, i.e. consecutive from offset `first` (exact integer test).
template <typename T>
inline bool cubic_axis(const Axis<T, true>& ax, T g, int pad, int64_t stride, int64_t o[4],
                       bits_t<T> m[4], T c[4], int64_t& first) {
  const T v = ax.unnormalize(g);
  const T f = exact_floor(v);
  cubic_coeffs_grid(v - f, T(-0.75), c);
  for (int k = 0; k < 4; ++k) {
    const T t = ax.tap(f + static_cast<T>(k - 1), pad);
    if (pad == kZeros) {
      tap_at(t, ax.size, stride, o[k], m[k]);
    } else {  // t in [0, size - 1] (NaN was clamped to 0)
      int64_t j = static_cast<int64_t>(t);
      if (j > ax.size - 1) j = ax.size - 1;  // only if size - 1 rounded up in T
      o[k] = j * stride;
      m[k] = kAll<T>;
    }
  }
  if (!(f >= T(1) && f <= static_cast<T>(ax.size))) return false;
  const int64_t i0 = static_cast<int64_t>(f);
  first = (i0 - 1) * stride;
  return i0 + 2 <= ax.size - 1;
}

template <typename T>
void plan_cubic2(const T* grid, const Shape& s, int64_t n, int64_t p0, int64_t p1, int pad,
                 bool align, Split<Cub2In<T>, Cub2Out<T>>& sp) {
  const Axis<T, true> ax(s.W, align), ay(s.H, align);
  plan_points(grid, s, n, p0, p1, sp, [&](int64_t r, const T* q,
                                          Split<Cub2In<T>, Cub2Out<T>>& o) {
    const T gx = q[0], gy = q[s.gK];
    int64_t xo[4], yo[4];
    bits_t<T> xm[4], ym[4];
    T cx[4], cy[4];
    int64_t fx = 0, fy = 0;
    const bool inx = cubic_axis(ax, gx, pad, s.sW, xo, xm, cx, fx);
    const bool iny = cubic_axis(ay, gy, pad, s.sH, yo, ym, cy, fy);
    if (inx && iny) {
      Cub2In<T>& e = o.add_in(r);
      e.o = fy + fx;
      for (int k = 0; k < 4; ++k) e.cx[k] = cx[k], e.cy[k] = cy[k];
    } else {
      Cub2Out<T>& e = o.add_out(r);
      for (int k = 0; k < 4; ++k) {
        e.xo[k] = xo[k], e.yo[k] = yo[k], e.xm[k] = xm[k], e.ym[k] = ym[k];
        e.cx[k] = cx[k], e.cy[k] = cy[k];
      }
    }
  });
}

// ---------------------------------------------------------------- apply
struct Steps {
  int64_t sW, sH, sD;
};

// A tap value in T; Masked: outside taps read element 0 and become exactly 0.
template <bool Masked, typename Tin, typename T>
inline T load(const Tin* src, int64_t o, bits_t<T> m) {
  const T v = static_cast<T>(src[o]);
  return Masked ? and_bits(v, m) : v;
}

// Each apply computes CB channels (planes sC apart in x, oP apart in out) of ne entries.
template <int CB, bool Masked, typename Tin, typename T>
inline void apply(const NearIn<T>* e, int64_t ne, const Tin* x, int64_t sC, const Steps&,
                  Tin* out, int64_t oP) {
  for (int64_t i = 0; i < ne; ++i) {
    const NearIn<T> q = e[i];
    for (int k = 0; k < CB; ++k) out[k * oP + q.p] = round_saturate<Tin, T>(static_cast<T>(x[k * sC + q.o]));
  }
}

template <int CB, bool Masked, typename Tin, typename T>
inline void apply(const NearOut* e, int64_t ne, const Tin*, int64_t, const Steps&, Tin* out,
                  int64_t oP) {
  const Tin zero = round_saturate<Tin, T>(T(0));
  for (int64_t i = 0; i < ne; ++i)
    for (int k = 0; k < CB; ++k) out[k * oP + e[i].p] = zero;
}

template <int CB, bool Masked, typename Tin, typename T>
inline void apply(const Lin2In<T>* e, int64_t ne, const Tin* x, int64_t sC, const Steps& st,
                  Tin* out, int64_t oP) {
  const int64_t sW = st.sW, sH = st.sH;
  for (int64_t i = 0; i < ne; ++i) {
    const Lin2In<T>& q = e[i];
    for (int k = 0; k < CB; ++k) {
      const Tin* src = x + k * sC + q.o;
      const T v0 = static_cast<T>(src[0]), v1 = static_cast<T>(src[sW]);
      const T v2 = static_cast<T>(src[sH]), v3 = static_cast<T>(src[sH + sW]);
      out[k * oP + q.p] = round_saturate<Tin, T>(v0 * q.w[0] + v1 * q.w[1] + v2 * q.w[2] + v3 * q.w[3]);
    }
  }
}

template <int CB, bool Masked, typename Tin, typename T>
inline void apply(const Lin2Out<T>* e, int64_t ne, const Tin* x, int64_t sC, const Steps&,
                  Tin* out, int64_t oP) {
  for (int64_t i = 0; i < ne; ++i) {
    const Lin2Out<T>& q = e[i];
    for (int k = 0; k < CB; ++k) {
      const Tin* src = x + k * sC;
      const T v0 = load<true, Tin, T>(src, q.o[0], q.m[0]);
      const T v1 = load<true, Tin, T>(src, q.o[1], q.m[1]);
      const T v2 = load<true, Tin, T>(src, q.o[2], q.m[2]);
      const T v3 = load<true, Tin, T>(src, q.o[3], q.m[3]);
      out[k * oP + q.p] = round_saturate<Tin, T>(v0 * q.w[0] + v1 * q.w[1] + v2 * q.w[2] + v3 * q.w[3]);
    }
  }
}

template <int CB, bool Masked, typename Tin, typename T>
inline void apply(const Lin3In<T>* e, int64_t ne, const Tin* x, int64_t sC, const Steps& st,
                  Tin* out, int64_t oP) {
  int64_t d[8];
  for (int t = 0; t < 8; ++t) d[t] = (t >> 2) * st.sD + ((t >> 1) & 1) * st.sH + (t & 1) * st.sW;
  for (int64_t i = 0; i < ne; ++i) {
    const Lin3In<T>& q = e[i];
    for (int k = 0; k < CB; ++k) {
      const Tin* src = x + k * sC + q.o;
      T acc = T(0);  // torch: out = 0; out += v * w for each tap, in order
      for (int t = 0; t < 8; ++t) acc = acc + static_cast<T>(src[d[t]]) * q.w[t];
      out[k * oP + q.p] = round_saturate<Tin, T>(acc);
    }
  }
}

template <int CB, bool Masked, typename Tin, typename T>
inline void apply(const Lin3Out<T>* e, int64_t ne, const Tin* x, int64_t sC, const Steps&,
                  Tin* out, int64_t oP) {
  for (int64_t i = 0; i < ne; ++i) {
    const Lin3Out<T>& q = e[i];
    for (int k = 0; k < CB; ++k) {
      const Tin* src = x + k * sC;
      T acc = T(0);
      for (int t = 0; t < 8; ++t) acc = acc + load<true, Tin, T>(src, q.o[t], q.m[t]) * q.w[t];
      out[k * oP + q.p] = round_saturate<Tin, T>(acc);
    }
  }
}

#if defined(__SSE2__)
// The bicubic sum of an inside point on a float plane whose rows are contiguous (sW = 1),
// with SSE: the products cx[j] * v[i][j] row by row (lanes = columns), transposed so
// that lanes = rows, summed over columns as r[i] = ((p0 + p1) + p2) + p3, then
// ((cy0 r0 + cy1 r1) + cy2 r2) + cy3 r3: the scalar sequence of operations, bit for bit.
// 27 instructions instead of 70 per output (the scalar loop is compute-bound).
inline float cubic_rows_sse(const float* row, int64_t sH, const float* cx, const float* cy) {
  const __m128 CX = _mm_loadu_ps(cx);
  __m128 p0 = _mm_mul_ps(_mm_loadu_ps(row), CX);
  __m128 p1 = _mm_mul_ps(_mm_loadu_ps(row + sH), CX);
  __m128 p2 = _mm_mul_ps(_mm_loadu_ps(row + 2 * sH), CX);
  __m128 p3 = _mm_mul_ps(_mm_loadu_ps(row + 3 * sH), CX);
  _MM_TRANSPOSE4_PS(p0, p1, p2, p3);
  const __m128 r = _mm_add_ps(_mm_add_ps(_mm_add_ps(p0, p1), p2), p3);
  const __m128 t = _mm_mul_ps(_mm_loadu_ps(cy), r);
  __m128 acc = _mm_add_ss(t, _mm_shuffle_ps(t, t, _MM_SHUFFLE(1, 1, 1, 1)));
  acc = _mm_add_ss(acc, _mm_movehl_ps(t, t));
  acc = _mm_add_ss(acc, _mm_shuffle_ps(t, t, _MM_SHUFFLE(3, 3, 3, 3)));
  return _mm_cvtss_f32(acc);
}
#endif

template <int CB, bool Masked, typename Tin, typename T>
inline void apply(const Cub2In<T>* e, int64_t ne, const Tin* x, int64_t sC, const Steps& st,
                  Tin* out, int64_t oP) {
  const int64_t sW = st.sW, sH = st.sH;
#if defined(__SSE2__)
  if constexpr (std::is_same<Tin, float>::value && std::is_same<T, float>::value) {
    if (sW == 1) {
      for (int64_t i = 0; i < ne; ++i) {
        const Cub2In<T>& q = e[i];
        for (int k = 0; k < CB; ++k)
          out[k * oP + q.p] = cubic_rows_sse(x + k * sC + q.o, sH, q.cx, q.cy);
      }
      return;
    }
  }
#endif
  for (int64_t i = 0; i < ne; ++i) {
    const Cub2In<T>& q = e[i];
    for (int k = 0; k < CB; ++k) {
      const Tin* row = x + k * sC + q.o;
      T r[4];
      for (int j = 0; j < 4; ++j, row += sH)  // torch: along x, then along y
        r[j] = q.cx[0] * static_cast<T>(row[0]) + q.cx[1] * static_cast<T>(row[sW]) +
               q.cx[2] * static_cast<T>(row[2 * sW]) + q.cx[3] * static_cast<T>(row[3 * sW]);
      out[k * oP + q.p] =
          round_saturate<Tin, T>(q.cy[0] * r[0] + q.cy[1] * r[1] + q.cy[2] * r[2] + q.cy[3] * r[3]);
    }
  }
}

#if defined(__SSE2__)
// The same for an edge point: the 16 taps gathered row by row (masked with "zeros").
inline float cubic_taps_sse(const float* src, const Cub2Out<float>& q, bool masked) {
  const __m128 CX = _mm_loadu_ps(q.cx);
  const __m128 XM = _mm_castsi128_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(q.xm)));
  __m128 p[4];
  for (int i = 0; i < 4; ++i) {
    const float* row = src + q.yo[i];
    __m128 v = _mm_setr_ps(row[q.xo[0]], row[q.xo[1]], row[q.xo[2]], row[q.xo[3]]);
    if (masked)
      v = _mm_and_ps(v, _mm_and_ps(XM, _mm_castsi128_ps(_mm_set1_epi32(
                                           static_cast<int>(q.ym[i])))));
    p[i] = _mm_mul_ps(v, CX);
  }
  _MM_TRANSPOSE4_PS(p[0], p[1], p[2], p[3]);
  const __m128 r = _mm_add_ps(_mm_add_ps(_mm_add_ps(p[0], p[1]), p[2]), p[3]);
  const __m128 t = _mm_mul_ps(_mm_loadu_ps(q.cy), r);
  __m128 acc = _mm_add_ss(t, _mm_shuffle_ps(t, t, _MM_SHUFFLE(1, 1, 1, 1)));
  acc = _mm_add_ss(acc, _mm_movehl_ps(t, t));
  acc = _mm_add_ss(acc, _mm_shuffle_ps(t, t, _MM_SHUFFLE(3, 3, 3, 3)));
  return _mm_cvtss_f32(acc);
}
#endif

template <int CB, bool Masked, typename Tin, typename T>
inline void apply(const Cub2Out<T>* e, int64_t ne, const Tin* x, int64_t sC, const Steps&,
                  Tin* out, int64_t oP) {
#if defined(__SSE2__)
  if constexpr (std::is_same<Tin, float>::value && std::is_same<T, float>::value) {
    for (int64_t i = 0; i < ne; ++i)
      for (int k = 0; k < CB; ++k)
        out[k * oP + e[i].p] = cubic_taps_sse(x + k * sC, e[i], Masked);
    return;
  }
#endif
  for (int64_t i = 0; i < ne; ++i) {
    const Cub2Out<T>& q = e[i];
    for (int k = 0; k < CB; ++k) {
      const Tin* src = x + k * sC;
      T r[4];
      for (int j = 0; j < 4; ++j) {
        const Tin* row = src + q.yo[j];
        const bits_t<T> ym = q.ym[j];
        r[j] = q.cx[0] * load<Masked, Tin, T>(row, q.xo[0], ym & q.xm[0]) +
               q.cx[1] * load<Masked, Tin, T>(row, q.xo[1], ym & q.xm[1]) +
               q.cx[2] * load<Masked, Tin, T>(row, q.xo[2], ym & q.xm[2]) +
               q.cx[3] * load<Masked, Tin, T>(row, q.xo[3], ym & q.xm[3]);
      }
      out[k * oP + q.p] =
          round_saturate<Tin, T>(q.cy[0] * r[0] + q.cy[1] * r[1] + q.cy[2] * r[2] + q.cy[3] * r[3]);
    }
  }
}

// A window's inside entries, then its edge entries, CB channels per pass.
template <int CB, bool Masked, typename Tin, typename T, typename In, typename Out>
inline void apply_both(const In* ei, int64_t ni, const Out* eo, int64_t no, const Tin* x,
                       int64_t sC, const Steps& st, Tin* out, int64_t oP) {
  apply<CB, Masked, Tin, T>(ei, ni, x, sC, st, out, oP);
  apply<CB, Masked, Tin, T>(eo, no, x, sC, st, out, oP);
}

// ---------------------------------------------------------------- driver
// Plan chunks of one image's output points, apply each to all channels.  Work items
// are (image, chunk); plan_fn(n, p0, p1, split) fills a chunk's plan.  Masked: whether
// the edge entries need their masks (always for bilinear; "zeros" for the others).
template <typename In, typename Out, bool Masked, typename Tin, typename T, typename PlanFn>
void run(const Tin* x, const Shape& s, Tin* out, int64_t taps, int nthreads, PlanFn plan_fn) {
  const int64_t P = s.Do * s.Ho * s.Wo;
  int64_t work;  // saturating: only the serial threshold uses it
  if (__builtin_mul_overflow(s.N * s.C, P, &work) || __builtin_mul_overflow(work, taps, &work))
    work = INT64_MAX;
  const int nt = threads_for(work, nthreads);
  const int64_t kmax = std::max<int64_t>(
      kGsWin, std::min(kGsPlanBytes, kGsPlanTotal / nt) /
                  static_cast<int64_t>(sizeof(In) + sizeof(Out)));
  // chunks per image: the plan holds at most kmax points; with threads, at least 2 items
  // per thread overall (dynamic scheduling evens out unequal chunk costs)
  int64_t cpi = (P + kmax - 1) / kmax;
  if (nt > 1) cpi = std::max<int64_t>(cpi, (2 * nt + s.N - 1) / s.N);
  cpi = std::min<int64_t>(cpi, P);
  const int64_t chunk = (P + cpi - 1) / cpi;
  const int64_t items = s.N * cpi;
  // One channel pass (C <= kGsCB): the plan is read once, so it is planned and applied
  // window by window (its entries stay in L1).
  const bool one_pass = s.C <= kGsCB;
  const int64_t span = one_pass ? std::min(chunk, kGsWin) : chunk;  // points per plan
  const int64_t nwin = (span + kGsWin - 1) / kGsWin;
  // every thread's scratch, allocated here: nothing allocates inside the parallel region
  ThreadScratch<In> ins(span, nt);
  ThreadScratch<Out> outs(span, nt);
  ThreadScratch<int64_t> wins(2 * (nwin + 1), nt);
  const Steps st{s.sW, s.sH, s.sD};
  static_assert(kGsCB == 4, "apply_window's switch covers passes of 1 to 4 channels");

  parallel_for(items, 1, nt, [&](int64_t item_lo, int64_t item_hi, int t) {
    Split<In, Out> sp{ins(t), outs(t), wins(t), wins(t) + (nwin + 1), 0, 0};
    // channels [c, c + cb) of window w of the current plan, cb = min(kGsCB, C - c) (xn:
    // image n's input; on: its outputs from the plan's first point, which entries' p count
    // from)
    auto apply_window = [&](int64_t w, int64_t c, const Tin* xn, Tin* on) {
      const In* ei = sp.in + sp.wi[w];
      const Out* eo = sp.out + sp.wo[w];
      const int64_t ni = sp.wi[w + 1] - sp.wi[w], no = sp.wo[w + 1] - sp.wo[w];
      const Tin* xc = xn + c * s.sC;
      Tin* oc = on + c * P;
      switch (std::min<int64_t>(kGsCB, s.C - c)) {
        case 1: apply_both<1, Masked, Tin, T>(ei, ni, eo, no, xc, s.sC, st, oc, P); break;
        case 2: apply_both<2, Masked, Tin, T>(ei, ni, eo, no, xc, s.sC, st, oc, P); break;
        case 3: apply_both<3, Masked, Tin, T>(ei, ni, eo, no, xc, s.sC, st, oc, P); break;
        default: apply_both<kGsCB, Masked, Tin, T>(ei, ni, eo, no, xc, s.sC, st, oc, P);
      }
    };
    for (int64_t item = item_lo; item < item_hi; ++item) {
      const int64_t n = item / cpi;
      const int64_t p0 = (item % cpi) * chunk;
      const int64_t p1 = std::min(P, p0 + chunk);
      if (p0 >= p1) continue;
      const Tin* xn = x + n * s.sN;
      Tin* on = out + n * s.C * P + p0;
      if (one_pass) {  // plan one window, apply it while its entries are in L1
        for (int64_t q0 = p0; q0 < p1; q0 += kGsWin) {
          plan_fn(n, q0, std::min(p1, q0 + kGsWin), sp);
          apply_window(0, 0, xn, on + (q0 - p0));
        }
        continue;
      }
      plan_fn(n, p0, p1, sp);
      const int64_t nw = (p1 - p0 + kGsWin - 1) / kGsWin;
      for (int64_t c = 0; c < s.C; c += kGsCB)  // a block's planes stay cached across windows
        for (int64_t w = 0; w < nw; ++w) apply_window(w, c, xn, on);
    }
  });
}

#if defined(__AVX2__)
// 2-D bilinear sampling of float with zeros padding and at most kGsCB channels (a
// spatial transformer's RGB images): L::kLanes output points at a time in registers,
// coordinates, floors, weights and masks as plan_linear2 computes them and the taps by
// masked gathers (an outside tap reads as +0, as `load` makes it), combined in `apply`'s
// order: the same operations, so the same bits as the plan path, which the baseline build
// runs.  No plan: with one channel pass the plan was written and read back once, and
// computing it point by point cost more than the sampling (STN workload, 8x3x256x256,
// 2 threads, hot: 3.5 ms against torch's 2.1; see docs/performance.md).  Offsets are
// 32-bit (direct_fits).
inline bool direct_fits(const Shape& s) {
  const int64_t lim = int64_t(1) << 30;
  return s.D == 1 && s.C <= kGsCB && s.W < lim && s.H < lim &&
         (s.W + 1) * (s.sW < 0 ? -s.sW : s.sW) + (s.H + 1) * (s.sH < 0 ? -s.sH : s.sH) < lim;
}

// The operations linear2_direct needs, one struct per instruction set: V holds floats,
// I int32s, M a lane mask.
struct Avx2Lanes {
  static constexpr int kLanes = 8;
  using V = __m256;
  using I = __m256i;
  using M = __m256i;  // all ones or 0 per lane
  static V set(float v) { return _mm256_set1_ps(v); }
  static I set(int v) { return _mm256_set1_epi32(v); }
  static V add(V a, V b) { return _mm256_add_ps(a, b); }
  static V sub(V a, V b) { return _mm256_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm256_mul_ps(a, b); }
  static I add(I a, I b) { return _mm256_add_epi32(a, b); }
  static I mul(I a, I b) { return _mm256_mullo_epi32(a, b); }
  static V floor(V v) { return _mm256_floor_ps(v); }
  static M in_range(V v, V lo, V hi) {  // lo <= v < hi, false for NaN
    return _mm256_castps_si256(
        _mm256_and_ps(_mm256_cmp_ps(v, lo, _CMP_GE_OQ), _mm256_cmp_ps(v, hi, _CMP_LT_OQ)));
  }
  static I trunc_where(M m, V f) { return _mm256_and_si256(_mm256_cvttps_epi32(f), m); }
  static M both(M a, M b) { return _mm256_and_si256(a, b); }
  static M gt(I a, I b) { return _mm256_cmpgt_epi32(a, b); }
  static M first(int cnt) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(cnt), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static bool all(M m) { return _mm256_movemask_ps(_mm256_castsi256_ps(m)) == 0xFF; }
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* dst, V r, M live, int cnt) {
    if (cnt == kLanes) _mm256_storeu_ps(dst, r);
    else _mm256_maskstore_ps(dst, live, r);
  }
  // A tap's offsets and live lanes, made once for every channel: gather(src, taps(o, m))
  // is src[o] where m, else +0, by scalar loads (an outside lane's offset zeroed, its
  // value masked off), not vgatherdps (microcoded on AMD Zen 1; scatter.hpp
  // load_at_offsets).  AMD Zen 1 VM, old / new module in one process, 2 threads: 8x3x
  // 256x256 grid U(-1.5, 1.5) 0.70-0.81.
  struct Taps {
    alignas(32) int32_t r[8];
    M m;
  };
  static Taps taps(I o, M m) {
    Taps t;
    _mm256_store_si256(reinterpret_cast<__m256i*>(t.r), _mm256_and_si256(o, m));
    t.m = m;
    return t;
  }
  static V gather(const float* src, const Taps& t) {
    const int32_t* r = t.r;
    const V v = _mm256_set_ps(src[r[7]], src[r[6]], src[r[5]], src[r[4]], src[r[3]],
                              src[r[2]], src[r[1]], src[r[0]]);
    return _mm256_and_ps(v, _mm256_castsi256_ps(t.m));
  }
  // The even and odd floats of a, b (8 (first, second) pairs) as two ordered vectors.
  static void deinterleave(V a, V b, V& even, V& odd) {
    auto ordered = [](V v) {  // 64-bit lanes 0, 2, 1, 3 -> 0, 1, 2, 3
      return _mm256_castpd_ps(
          _mm256_permute4x64_pd(_mm256_castps_pd(v), _MM_SHUFFLE(3, 1, 2, 0)));
    };
    even = ordered(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0)));
    odd = ordered(_mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1)));
  }
  // src[o] and src[o + 1] of every lane: 8-byte loads (movlpd / movhpd) into vectors,
  // split in registers (Zen 3: faster than two gathers).  Loaded as memcpy'd doubles they
  // went through general registers and the stack: STN workload on an Emerald Rapids VM,
  // back to back, 2.08 / 1.71 / 2.54 ms that way, 1.96 / 1.64 / 2.30 now (one process,
  // three runs), as fast as a gather per tap there (1.97 / 1.64 / 2.15)
  static void pairs_at(const float* src, I o, V& left, V& right) {
    alignas(32) int32_t r[8];
    _mm256_store_si256(reinterpret_cast<__m256i*>(r), o);
    auto two = [&](int k) {  // the pairs of lanes k and k + 1
      const double* p0 = reinterpret_cast<const double*>(src + r[k]);
      const double* p1 = reinterpret_cast<const double*>(src + r[k + 1]);
      return _mm_loadh_pd(_mm_loadl_pd(_mm_setzero_pd(), p0), p1);
    };
    auto four = [&](int k) {
      return _mm256_castpd_ps(_mm256_insertf128_pd(_mm256_castpd128_pd256(two(k)), two(k + 2), 1));
    };
    deinterleave(four(0), four(4), left, right);
  }
};

#if defined(__AVX512F__)
struct Avx512Lanes {
  static constexpr int kLanes = 16;
  using V = __m512;
  using I = __m512i;
  using M = __mmask16;
  static V set(float v) { return _mm512_set1_ps(v); }
  static I set(int v) { return _mm512_set1_epi32(v); }
  static V add(V a, V b) { return _mm512_add_ps(a, b); }
  static V sub(V a, V b) { return _mm512_sub_ps(a, b); }
  static V mul(V a, V b) { return _mm512_mul_ps(a, b); }
  static I add(I a, I b) { return _mm512_add_epi32(a, b); }
  static I mul(I a, I b) { return _mm512_mullo_epi32(a, b); }
  static V floor(V v) { return _mm512_roundscale_ps(v, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC); }
  static M in_range(V v, V lo, V hi) {
    return _mm512_cmp_ps_mask(v, lo, _CMP_GE_OQ) & _mm512_cmp_ps_mask(v, hi, _CMP_LT_OQ);
  }
  static I trunc_where(M m, V f) { return _mm512_maskz_cvttps_epi32(m, f); }
  static M both(M a, M b) { return a & b; }
  static M gt(I a, I b) { return _mm512_cmpgt_epi32_mask(a, b); }
  static M first(int cnt) { return first_lanes<M>(cnt); }
  static bool all(M m) { return m == 0xFFFF; }
  static V load(const float* p) { return _mm512_loadu_ps(p); }
  static void store(float* dst, V r, M live, int) { _mm512_mask_storeu_ps(dst, live, r); }
  struct Taps {  // (see Avx2Lanes::Taps)
    I o;
    M m;
  };
  static Taps taps(I o, M m) { return Taps{o, m}; }
  static V gather(const float* src, const Taps& t) {
    return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), t.m, t.o, src, 4);
  }
  static void deinterleave(V a, V b, V& even, V& odd) {
    const I e = _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    even = _mm512_permutex2var_ps(a, e, b);
    odd = _mm512_permutex2var_ps(a, _mm512_add_epi32(e, _mm512_set1_epi32(1)), b);
  }
  // src[o] and src[o + 1] of every lane: two gathers of 8-byte pairs, split in registers
  // (half the loads of 32 floats; STN workload on an Emerald Rapids VM, hot: 1.51 ms
  // against 1.59 with a gather per tap)
  static void pairs_at(const float* src, I o, V& left, V& right) {
    const V a = _mm512_castpd_ps(_mm512_i32gather_pd(_mm512_castsi512_si256(o), src, 4));
    const V b = _mm512_castpd_ps(_mm512_i32gather_pd(_mm512_extracti64x4_epi64(o, 1), src, 4));
    deinterleave(a, b, left, right);
  }
};
#endif

template <typename L>
void linear2_direct(const float* x, const float* grid, const Shape& s, bool align, float* out,
                    int nthreads) {
  using V = typename L::V;
  using I = typename L::I;
  using M = typename L::M;
  constexpr int kL = L::kLanes;
  const Axis<float, true> ax(s.W, align), ay(s.H, align);
  const int64_t P = s.Ho * s.Wo;
  const int nt = threads_for(work_product(work_product(s.N * s.C, P), 4), nthreads);
  constexpr int64_t kChunk = 4096;  // points per work item (a multiple of kL)
  const int64_t cpi = (P + kChunk - 1) / kChunk, items = s.N * cpi;
  const V one = L::set(1.0f), half = L::set(0.5f), mone = L::set(-1.0f);
  const V sx = L::set(ax.scale), sy = L::set(ay.scale);
  const V wlim = L::set(static_cast<float>(s.W)), hlim = L::set(static_cast<float>(s.H));
  const I iw = L::set(static_cast<int>(s.W)), ih = L::set(static_cast<int>(s.H)),
          isw = L::set(static_cast<int>(s.sW)), ish = L::set(static_cast<int>(s.sH)),
          ione = L::set(1), imone = L::set(-1);
  const bool paired = s.gW == 2 && s.gK == 1;  // (x, y) pairs contiguous along a row
  // One axis: unnormalized coordinate v, floor f, tap index i0 (0 where v is outside
  // [-1, size) or NaN: both masks 0 then), masks of taps i0 and i0 + 1.
  auto axis = [&](V g, V scale, V lim, I isize, V& v, V& f, I& i0, M& m0, M& m1) {
    v = L::mul(L::add(g, one), scale);
    if (!align) v = L::sub(v, half);
    f = L::floor(v);
    const M in = L::in_range(v, mone, lim);
    i0 = L::trunc_where(in, f);
    m0 = L::both(in, L::gt(i0, imone));
    m1 = L::both(in, L::gt(isize, L::add(i0, ione)));  // i0 + 1 >= 0 when in
  };
  parallel_for(items, 1, nt, [&](int64_t lo, int64_t hi, int) {
    for (int64_t item = lo; item < hi; ++item) {
      const int64_t n = item / cpi, p0 = (item % cpi) * kChunk;
      const int64_t p1 = std::min(P, p0 + kChunk);
      const float* xn = x + n * s.sN;
      float* on = out + n * s.C * P;
      GridWalk<float> gw(grid, s, n, p0);
      for (int64_t p = p0; p < p1; p += kL) {
        const int cnt = static_cast<int>(std::min<int64_t>(kL, p1 - p));
        V GX, GY;
        if (cnt == kL && paired && gw.w + kL <= s.Wo) {
          // the (x, y) pairs of one grid row: two loads, de-interleaved in registers (a
          // store of scalars then a vector load stalled on store forwarding)
          const float* q = gw.at();
          L::deinterleave(L::load(q), L::load(q + kL), GX, GY);
          for (int k = 0; k < kL; ++k) gw.next();
        } else {
          float tx[kL] = {}, ty[kL] = {};
          for (int k = 0; k < cnt; ++k, gw.next()) {
            tx[k] = gw.at()[0];
            ty[k] = gw.at()[s.gK];
          }
          GX = L::load(tx);
          GY = L::load(ty);
        }
        const M live = L::first(cnt);
        V X, FX, Y, FY;
        I ix, iy;
        M mx0, mx1, my0, my1;
        axis(GX, sx, wlim, iw, X, FX, ix, mx0, mx1);
        axis(GY, sy, hlim, ih, Y, FY, iy, my0, my1);
        my0 = L::both(my0, live);
        my1 = L::both(my1, live);
        // torch: w = x - x_w, e = 1 - w, n = y - y_n, s = 1 - n; nw = s * e ...
        const V wx = L::sub(X, FX), ex = L::sub(one, wx);
        const V ny = L::sub(Y, FY), sy_ = L::sub(one, ny);
        const V w0 = L::mul(sy_, ex), w1 = L::mul(sy_, wx);
        const V w2 = L::mul(ny, ex), w3 = L::mul(ny, wx);
        const I o0 = L::add(L::mul(iy, ish), L::mul(ix, isw));
        const I o1 = L::add(o0, isw), o2 = L::add(o0, ish), o3 = L::add(o2, isw);
        const M k0 = L::both(my0, mx0), k1 = L::both(my0, mx1);
        const M k2 = L::both(my1, mx0), k3 = L::both(my1, mx1);
        // apply's order: ((v0 * w0 + v1 * w1) + v2 * w2) + v3 * w3
        auto combine = [&](V v0, V v1, V v2, V v3, float* dst) {
          const V r = L::add(L::add(L::add(L::mul(v0, w0), L::mul(v1, w1)), L::mul(v2, w2)),
                             L::mul(v3, w3));
          L::store(dst, r, live, cnt);
        };
        if (s.sW == 1 && L::all(L::both(L::both(k0, k1), L::both(k2, k3)))) {
          // every tap inside, nw/ne and sw/se adjacent: loaded as pairs
          for (int64_t c = 0; c < s.C; ++c) {
            const float* src = xn + c * s.sC;
            V v0, v1, v2, v3;
            L::pairs_at(src, o0, v0, v1);
            L::pairs_at(src, o2, v2, v3);
            combine(v0, v1, v2, v3, on + c * P + p);
          }
          continue;
        }
        const auto t0 = L::taps(o0, k0), t1 = L::taps(o1, k1);
        const auto t2 = L::taps(o2, k2), t3 = L::taps(o3, k3);
        for (int64_t c = 0; c < s.C; ++c) {  // an outside tap is gathered as +0
          const float* src = xn + c * s.sC;
          combine(L::gather(src, t0), L::gather(src, t1), L::gather(src, t2),
                  L::gather(src, t3), on + c * P + p);
        }
      }
    }
  });
}

// The lanes of linear2_direct in this build: Avx512Lanes' gathers where they are fast,
// Avx2Lanes' scalar loads on AMD CPUs, whose gathers are slower than scalar loads.  Zen 4
// VM, STN workload, 2 threads: the x86-64-v4 build with gathers 3.29 ms against the
// x86-64-v3 build's 2.22 (bench, back to back), 16-lane scalar loads 1.07x the v3 build
// (scripts/simd_ab.py); docs/performance.md, forty-fifth session.  The two give the same
// bits (the tests compare every build with the baseline's): a test machine runs the one
// its CPU takes.
inline void linear2_direct_any(const float* x, const float* grid, const Shape& s, bool align,
                               float* out, int nthreads) {
#if defined(__AVX512F__)
  if (!amd_cpu())
    return linear2_direct<Avx512Lanes>(x, grid, s, align, out, nthreads);
#endif
  linear2_direct<Avx2Lanes>(x, grid, s, align, out, nthreads);
}
#endif

}  // namespace gs

// x (N, C, [D,] H, W) with every extent >= 1 and N * C * outputs >= 1 (checked by the
// public layer), grid in the compute type T, out C-contiguous.  rank: 2 or 3 spatial
// axes; mode / padding: gs::Mode / gs::Pad (bicubic only with rank 2).
template <typename Tin, typename T>
void grid_sample(const Tin* x, const T* grid, const gs::Shape& s, int rank, int mode,
                 int padding, bool align, Tin* out, int nthreads) {
  using namespace gs;
  const int pad = padding;
  using NearSplit = Split<NearIn<T>, NearOut>;
  if (rank == 2) {
#if defined(__AVX2__)
    if constexpr (std::is_same<Tin, float>::value && std::is_same<T, float>::value)
      if (mode == kBilinear && pad == kZeros && direct_fits(s)) {
        linear2_direct_any(x, grid, s, align, out, nthreads);
        return;
      }
#endif
    if (mode == kNearest) {
      run<NearIn<T>, NearOut, false, Tin, T>(
          x, s, out, 1, nthreads, [&](int64_t n, int64_t p0, int64_t p1, NearSplit& sp) {
            plan_nearest2(grid, s, n, p0, p1, pad, align, sp);
          });
    } else if (mode == kBicubic) {
      auto plan = [&](int64_t n, int64_t p0, int64_t p1, Split<Cub2In<T>, Cub2Out<T>>& sp) {
        plan_cubic2(grid, s, n, p0, p1, pad, align, sp);
      };
      // border/reflection edge points have padded (repeated) taps but no outside ones
      if (pad == kZeros) run<Cub2In<T>, Cub2Out<T>, true, Tin, T>(x, s, out, 16, nthreads, plan);
      else run<Cub2In<T>, Cub2Out<T>, false, Tin, T>(x, s, out, 16, nthreads, plan);
    } else {
      // edge points are masked for every padding: with border/reflection the second tap
      // of a coordinate on the last pixel lies outside (weight 0; torch masks it)
      run<Lin2In<T>, Lin2Out<T>, true, Tin, T>(
          x, s, out, 4, nthreads,
          [&](int64_t n, int64_t p0, int64_t p1, Split<Lin2In<T>, Lin2Out<T>>& sp) {
            plan_linear2(grid, s, n, p0, p1, pad, align, sp);
          });
    }
  } else {
    if (mode == kNearest) {
      run<NearIn<T>, NearOut, false, Tin, T>(
          x, s, out, 1, nthreads, [&](int64_t n, int64_t p0, int64_t p1, NearSplit& sp) {
            plan_nearest3(grid, s, n, p0, p1, pad, align, sp);
          });
    } else {
      run<Lin3In<T>, Lin3Out<T>, true, Tin, T>(
          x, s, out, 8, nthreads,
          [&](int64_t n, int64_t p0, int64_t p1, Split<Lin3In<T>, Lin3Out<T>>& sp) {
            plan_linear3(grid, s, n, p0, p1, pad, align, sp);
          });
    }
  }
}

}  // namespace fastops
