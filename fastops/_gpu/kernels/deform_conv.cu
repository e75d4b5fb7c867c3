// Deformable convolution, the sampling half: a column matrix for cuBLAS (cupy.matmul).
// Preamble defines:
//   T   float or double (float16 arrives as float)
// The sample arithmetic is the CPU kernel's (fastops/_cpu/include/deform_conv.hpp,
// dcn_sample and the column blend), operation for operation, with round-to-nearest
// intrinsics so that NVRTC cannot contract it into FMAs: the columns equal the CPU ones
// bit for bit (up to the device's flush-to-zero of denormals); the GEMM then sums in
// cuBLAS's order.
//
// col[nl][c * K + k][q] for images n0 + nl (nl < nb), channels c < C, taps k < K and
// tile pixels q < np (output pixel p0 + q): the sample of x[n, c] at tap k, times the
// mask.  One thread per (image, channel, pixel), looping over the taps, grid-stride,
// 64-bit indices; consecutive threads take consecutive pixels (coalesced writes).

// The torchvision/MMCV boundary rule (deform_conv.hpp dcn_sample): outside
// (-1, H) x (-1, W), or a NaN coordinate: every corner weight is m * 0; otherwise corners
// outside the map read 0.  The weighted sum is w0*v0 + w1*v1 + w2*v2 + w3*v3, left to
// right, with w = m * (axis weight product).
__device__ __forceinline__ T dcn_sample(const T* __restrict__ x, i64 base, i64 H, i64 W,
                                        i64 sH, i64 sW, T py, T px, T m) {
  T w[4];
  T v[4] = {(T)0, (T)0, (T)0, (T)0};
  if (!(py > (T)-1 && py < (T)H && px > (T)-1 && px < (T)W)) {
    const T z = mul_rn(m, (T)0);
    w[0] = w[1] = w[2] = w[3] = z;
  } else {
    const T fy = floor(py);
    const T fx = floor(px);
    const i64 yl = (i64)fy;  // in [-1, H - 1]
    const i64 xl = (i64)fx;
    const i64 yh = yl + 1;
    const i64 xh = xl + 1;
    const T ly = sub_rn(py, fy);
    const T lx = sub_rn(px, fx);
    const T hy = sub_rn((T)1, ly);
    const T hx = sub_rn((T)1, lx);
    const bool ylo = yl >= 0, yhi = yh <= H - 1, xlo = xl >= 0, xhi = xh <= W - 1;
    if (ylo && xlo) v[0] = x[base + yl * sH + xl * sW];
    if (ylo && xhi) v[1] = x[base + yl * sH + xh * sW];
    if (yhi && xlo) v[2] = x[base + yh * sH + xl * sW];
    if (yhi && xhi) v[3] = x[base + yh * sH + xh * sW];
    w[0] = mul_rn(m, mul_rn(hy, hx));
    w[1] = mul_rn(m, mul_rn(hy, lx));
    w[2] = mul_rn(m, mul_rn(ly, hx));
    w[3] = mul_rn(m, mul_rn(ly, lx));
  }
  return add_rn(add_rn(add_rn(mul_rn(w[0], v[0]), mul_rn(w[1], v[1])), mul_rn(w[2], v[2])),
                mul_rn(w[3], v[3]));
}

extern "C" __global__ void deform_im2col(
    const T* __restrict__ x, i64 C, i64 H, i64 W, i64 sxN, i64 sxC, i64 sxH, i64 sxW,
    const T* __restrict__ off, i64 soN, i64 soC, i64 soH, i64 soW,
    const T* __restrict__ mask, i64 smN, i64 smC, i64 smH, i64 smW, int has_mask,
    i64 KH, i64 KW, i64 stride_h, i64 stride_w, i64 pad_h, i64 pad_w, i64 dil_h, i64 dil_w,
    i64 Cd, i64 OW, i64 n0, i64 nb, i64 p0, i64 np, T* __restrict__ col) {
  const i64 K = KH * KW;
  const i64 total = nb * C * np;
  for (i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x; idx < total;
       idx += (i64)blockDim.x * gridDim.x) {
    const i64 q = idx % np;
    const i64 t = idx / np;
    const i64 c = t % C;
    const i64 nl = t / C;
    const i64 n = n0 + nl;
    const i64 d = c / Cd;
    const i64 p = p0 + q;
    const i64 oy = p / OW;
    const i64 ox = p - oy * OW;
    const i64 base = n * sxN + c * sxC;
    const i64 o_at = n * soN + oy * soH + ox * soW;
    const i64 m_at = n * smN + oy * smH + ox * smW;
    T* dst = col + (nl * C + c) * K * np + q;
    for (i64 i = 0; i < KH; ++i) {
      for (i64 j = 0; j < KW; ++j) {
        const i64 k = i * KW + j;
        const T py = add_rn((T)(oy * stride_h - pad_h + i * dil_h),
                            off[o_at + (d * 2 * K + 2 * k) * soC]);
        const T px = add_rn((T)(ox * stride_w - pad_w + j * dil_w),
                            off[o_at + (d * 2 * K + 2 * k + 1) * soC]);
        const T m = has_mask ? mask[m_at + (d * K + k) * smC] : (T)1;
        dst[k * np] = dcn_sample(x, base, H, W, sxH, sxW, py, px, m);
      }
    }
  }
}
