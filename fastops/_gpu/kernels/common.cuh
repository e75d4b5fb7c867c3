// Shared by every fastops kernel.  Compiled by NVRTC: no host headers.
typedef long long i64;
typedef unsigned long long u64;
typedef unsigned int u32;

// Template parameters here use long names: the preamble #defines T, U, KEY, ...
template <typename Elem>
__device__ __forceinline__ bool is_nan(Elem v) { return v != v; }

// Order-preserving unsigned key of a non-NaN float: a < b  <=>  key(a) < key(b).
// -0.0 and +0.0 get one key (they compare equal, so the CPU kernels treat them as a tie).
__device__ __forceinline__ u32 float_order_key(float v) {
  if (v == 0.0f) v = 0.0f;
  u32 b = __float_as_uint(v);
  return (b >> 31) ? ~b : (b | 0x80000000u);
}
__device__ __forceinline__ u64 float_order_key(double v) {
  if (v == 0.0) v = 0.0;
  u64 b = (u64)__double_as_longlong(v);
  return (b >> 63) ? ~b : (b | 0x8000000000000000ull);
}

// Round-to-nearest arithmetic that NVRTC never contracts into an FMA: kernels that must
// be bit-identical to the CPU ones (nms, roi_align) use these for products and sums.
__device__ __forceinline__ float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ __forceinline__ double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ __forceinline__ float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ __forceinline__ double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ __forceinline__ float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ __forceinline__ double sub_rn(double a, double b) { return __dsub_rn(a, b); }
__device__ __forceinline__ float div_rn(float a, float b) { return __fdiv_rn(a, b); }
__device__ __forceinline__ double div_rn(double a, double b) { return __ddiv_rn(a, b); }

// Inclusive block-wide prefix sum of one value per thread (blockDim.x <= 1024).
// `buf` is shared scratch of blockDim.x entries; every thread must call it.
template <typename Val>
__device__ Val block_inclusive_scan(Val v, Val* buf) {
  const int t = threadIdx.x;
  buf[t] = v;
  __syncthreads();
  for (int off = 1; off < blockDim.x; off <<= 1) {
    Val add = t >= off ? buf[t - off] : Val(0);
    __syncthreads();
    buf[t] += add;
    __syncthreads();
  }
  Val r = buf[t];
  __syncthreads();
  return r;
}
