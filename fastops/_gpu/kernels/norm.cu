// InstanceNormalization.  Preamble defines:
//   T   float or double (float16 arrives as float)
// Same statistics and output formula as the CPU kernel (include/norm.hpp): float64 sums
// of d = x - x0 (x0 the plane's first element), the mean split into m_hi + m_lo, and
// y = ((x - m_hi) - m_lo) * a + b with round-to-nearest intrinsics (no FMA).  The sums
// are reduced in a different (but fixed) order than on the CPU, so float results agree
// within rounding and are deterministic from run to run.

// One block per (n, c) plane (grid-stride over planes): coalesced double sums, a fixed
// shared-memory tree, then thread 0 writes the plane's (m_hi, m_lo, a, b).
extern "C" __global__ void norm_stats(const T* x, i64 P, i64 C, i64 L, i64 sN, i64 sC,
                                      const double* scale, const double* bias, double eps,
                                      T* coef) {
  __shared__ double s1[256], s2[256];
  const int tid = threadIdx.x;
  for (i64 p = blockIdx.x; p < P; p += gridDim.x) {
    const T* xp = x + (p / C) * sN + (p % C) * sC;
    const double x0 = (double)xp[0];
    double a = 0, b = 0;
    for (i64 i = tid; i < L; i += blockDim.x) {
      const double d = (double)xp[i] - x0;
      a += d;
      b += d * d;
    }
    s1[tid] = a;
    s2[tid] = b;
    __syncthreads();
    for (int half = blockDim.x / 2; half > 0; half >>= 1) {
      if (tid < half) {
        s1[tid] += s1[tid + half];
        s2[tid] += s2[tid + half];
      }
      __syncthreads();
    }
    if (tid == 0) {
      const double md = s1[0] / (double)L;
      double var = s2[0] / (double)L - md * md;
      if (var < 0) var = 0;
      const double mean = x0 + md;
      const i64 c = p % C;
      const T m_hi = (T)mean;
      coef[4 * p] = m_hi;
      coef[4 * p + 1] = (T)(mean - (double)m_hi);
      coef[4 * p + 2] = (T)(scale[c] / sqrt(var + eps));
      coef[4 * p + 3] = (T)bias[c];
    }
    __syncthreads();  // s1/s2 are reused by the next plane
  }
}

// y (P, L) C-contiguous, one thread per element (grid-stride).
extern "C" __global__ void norm_apply(const T* x, i64 P, i64 C, i64 L, i64 sN, i64 sC,
                                      const T* coef, T* y) {
  const i64 total = P * L;
  for (i64 e = (i64)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (i64)gridDim.x * blockDim.x) {
    const i64 p = e / L, i = e - p * L;
    const T v = x[(p / C) * sN + (p % C) * sC + i];
    const T* k = coef + 4 * p;
    y[e] = add_rn(mul_rn(sub_rn(sub_rn(v, k[0]), k[1]), k[2]), k[3]);
  }
}
