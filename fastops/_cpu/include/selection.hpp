// TopK, cummax/cummin and NonZero kernels, templated on the element type.
//
// Layout convention: the op axis of an N-d input is viewed as (outer, n, inner) with
// element strides (s_outer, s_n, s_inner); outputs are C-contiguous (outer, m, inner).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <type_traits>
#include <vector>

#include "common.hpp"
#include "npy_types.hpp"
#include "parallel.hpp"

#if defined(__AVX512F__) || defined(__AVX2__) || defined(__BMI__)
#include <immintrin.h>
#endif

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace fastops {

// ----------------------------------------------------------------------------- TopK
// GCC's generic vectors of the build's width (wider ones go through the stack), for the
// integer scans: plain loops over 64 values were left scalar or half scalar.
#if defined(__AVX2__)
constexpr int kVecBytes = 32;
#else
constexpr int kVecBytes = 16;
#endif
// Integer rows scanned with these vectors: 8-byte lanes only with AVX2 (SSE2 has no
// 64-bit compare, and GCC's emulation made topk int64 rows 2.2x slower).
template <typename T>
constexpr bool kIntScan = std::is_integral<T>::value && !std::is_same<T, bool>::value &&
                          (sizeof(T) < 8 || kVecBytes == 32);
template <typename T>
struct IntVec {
  typedef T V __attribute__((vector_size(kVecBytes)));
  static constexpr int kLanes = kVecBytes / sizeof(T);
  static V load(const T* p) {
    V v;
    std::memcpy(&v, p, sizeof(V));
    return v;
  }
  template <bool Largest>
  static V best(V a, V b) { return Largest ? (a > b ? a : b) : (a < b ? a : b); }
  // Bit sizeof(T) * i set where lane i of the vector at p beats thr (x86: one movemask)
  template <bool Largest>
  static uint32_t beat_bits(const T* p, T thr) {
    const V v = load(p);
    const V hit = Largest ? v > thr : v < thr;   // lanes of all ones or zeros
#if defined(__AVX2__)
    __m256i h;
    std::memcpy(&h, &hit, sizeof(h));
    const uint32_t bits = static_cast<uint32_t>(_mm256_movemask_epi8(h));
#elif defined(__SSE2__)
    __m128i h;
    std::memcpy(&h, &hit, sizeof(h));
    const uint32_t bits = static_cast<uint32_t>(_mm_movemask_epi8(h));
#else
    uint32_t bits = 0;
    for (int i = 0; i < kLanes; ++i) bits |= uint32_t(hit[i] != 0) << (i * sizeof(T));
#endif
    return bits & kLaneLowBits;
  }
  static constexpr uint32_t kLaneLowBits = sizeof(T) == 1   ? 0xFFFFFFFFu
                                           : sizeof(T) == 2 ? 0x55555555u
                                           : sizeof(T) == 4 ? 0x11111111u
                                                            : 0x01010101u;
};

// Ranking: by value (descending for largest, ascending for smallest); NaN ranks above
// every number in both cases (as torch.topk: a NaN is "largest"); ties: lower index first.
template <typename T>
struct Entry {
  T v;
  int64_t i;
};

template <typename T, bool Largest>
struct Rank {
  // strictly better by value alone
  static inline bool value_better(T a, T b) {
    if (Largest) return a > b || (is_nan(a) && !is_nan(b));
    return a < b || (is_nan(b) && !is_nan(a));
  }
  // whether any of 64 contiguous values may beat thr (may over-report, never under-report)
  static inline bool any_better(const T* p, T thr) {
    if constexpr (kIntScan<T>) {  // the block's extreme against thr
      using IV = IntVec<T>;
      typename IV::V e = IV::load(p);
      for (int v = IV::kLanes; v < 64; v += IV::kLanes)
        e = IV::template best<Largest>(e, IV::load(p + v));
      const auto hit = Largest ? e > thr : e < thr;
      uint64_t w[kVecBytes / 8];
      std::memcpy(w, &hit, sizeof(w));
      uint64_t any = 0;
      for (uint64_t x : w) any |= x;
      return any != 0;
    }
    int any = 0;
    if (Largest) {
      for (int i = 0; i < 64; ++i) any |= (p[i] > thr) | is_nan(p[i]);
    } else {
      for (int i = 0; i < 64; ++i) any |= (p[i] < thr);
      any |= is_nan(thr);
    }
    return any != 0;
  }
  // float: one bit per value of 64 contiguous ones that may beat thr (the same
  // over-report as any_better), so that a block's candidates are visited by their bits
  static inline uint64_t better_bits(const float* p, float thr) {
    if (!Largest && is_nan(thr)) return ~uint64_t(0);  // every number beats a NaN
    uint64_t bits = 0;
    // (largest: "not <=", true for a NaN on either side, one compare a vector; the
    // 64 x 1M k=100 rows ran 1.33x slower with a separate NaN compare and mask shifts)
#if defined(__AVX512F__)
    const __m512 t = _mm512_set1_ps(thr);
    __mmask16 m[4];
    for (int i = 0; i < 4; ++i)
      m[i] = _mm512_cmp_ps_mask(_mm512_loadu_ps(p + 16 * i), t,
                                Largest ? _CMP_NLE_UQ : _CMP_LT_OQ);
    if ((m[0] | m[1] | m[2] | m[3]) == 0) return 0;
    for (int i = 0; i < 4; ++i) bits |= static_cast<uint64_t>(m[i]) << (16 * i);
#elif defined(__AVX2__)
    const __m256 t = _mm256_set1_ps(thr);
    for (int i = 0; i < 8; ++i)
      bits |= static_cast<uint64_t>(_mm256_movemask_ps(_mm256_cmp_ps(
                  _mm256_loadu_ps(p + 8 * i), t, Largest ? _CMP_NLE_UQ : _CMP_LT_OQ)))
              << (8 * i);
#elif defined(__SSE2__)
    const __m128 t = _mm_set1_ps(thr);
    for (int i = 0; i < 16; ++i) {
      const __m128 v = _mm_loadu_ps(p + 4 * i);
      bits |= static_cast<uint64_t>(_mm_movemask_ps(Largest ? _mm_cmpnle_ps(v, t)
                                                            : _mm_cmplt_ps(v, t))) << (4 * i);
    }
#else
    for (int i = 0; i < 64; ++i)
      bits |= static_cast<uint64_t>(Largest ? (p[i] > thr) | is_nan(p[i]) : p[i] < thr) << i;
#endif
    return bits;
  }
  // total order: a ranks before b
  static inline bool before(const Entry<T>& a, const Entry<T>& b) {
    if (value_better(a.v, b.v)) return true;
    if (value_better(b.v, a.v)) return false;
    return a.i < b.i;  // equal values (or both NaN)
  }
  bool operator()(const Entry<T>& a, const Entry<T>& b) const { return before(a, b); }
};

// Min-heap of the k best (root = worst kept), with a replace-root operation.
template <typename T, bool Largest>
inline void heap_sift_down(Entry<T>* h, int64_t k, int64_t pos) {
  using R = Rank<T, Largest>;
  Entry<T> item = h[pos];
  for (;;) {
    int64_t c = 2 * pos + 1;
    if (c >= k) break;
    // pick the worse child (the one that does not rank before the other)
    if (c + 1 < k && R::before(h[c], h[c + 1])) ++c;
    if (!R::before(item, h[c])) break;
    h[pos] = h[c];
    pos = c;
  }
  h[pos] = item;
}

// Select the k best of `m` candidates read by `get(j) -> Entry`, into out[0:k]: best first
// when `sorted`, else in ascending index order (deterministic, and what the GPU kernel's
// ordered compaction gives).  `scratch` grows on the partition path.
//
// Algorithm switch, measured on the 2-core CI machine (x86-64, one thread, float32
// normal rows; heap vs nth_element+sort of the k winners, ms per 2M elements):
//   n=1000:   k=32 22 vs 32, k=64 33 vs 29;   n=10000: k=256 22 vs 27, k=512 47 vs 32;
//   n=100000: k=1024 15 vs 21, k=2048 25 vs 24.
// The heap wins while n/k is above about 24 (replacements grow like k*log(n/k)).
constexpr int64_t kHeapRatio = 24;
// Below the heap's range, k <= kInsertMax keeps a sorted insertion list instead of
// partitioning (topk 100000x20 k=5 and 20000x80 k=5 of the short-row sweep, fastops/
// _bench/selection.py, were 1.3-1.8x onnxruntime with the partition).
constexpr int64_t kInsertMax = 16;

template <typename T>
inline void sort_by_index(Entry<T>* e, int64_t k) {
  std::sort(e, e + k, [](const Entry<T>& a, const Entry<T>& b) { return a.i < b.i; });
}


// The max (Max) or min of p[0:n] by plain > (<), so NaN never wins, and whether any
// value is NaN: branch-free, in independent accumulators.  Explicit SSE2 for float and
// double (the compiler vectorized the generic loop for some lane counts and types
// only: 4x slower where it did not); other types vectorize as written.  The result is
// one of the values that compare equal to the extreme (which zero, for signed zeros,
// depends on the lanes): callers locate the position by ==.
template <typename T, bool Max>
inline T extreme_value(const T* p, int64_t n, bool* has_nan) {
  auto beats = [](T v, T b) { return Max ? v > b : v < b; };
  T b = p[0];
  bool nan = false;
  int64_t j = 0;
#if defined(__SSE2__)
  if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value) {
    using S = Sse<T>;
    using V = typename S::V;
    constexpr int64_t W = S::kWidth, step = 4 * W;
    // max(v, a) = v > a ? v : a, exactly `beats`; likewise min
    auto pick = [](V v, V a) { return Max ? S::max(v, a) : S::min(v, a); };
    if (n >= step) {
      V a0 = S::load(p), a1 = S::load(p + W), a2 = S::load(p + 2 * W), a3 = S::load(p + 3 * W);
      V u = S::bor(S::bor(S::unord(a0), S::unord(a1)), S::bor(S::unord(a2), S::unord(a3)));
      for (j = step; j + step <= n; j += step) {
        const V v0 = S::load(p + j), v1 = S::load(p + j + W), v2 = S::load(p + j + 2 * W),
                v3 = S::load(p + j + 3 * W);
        a0 = pick(v0, a0);
        a1 = pick(v1, a1);
        a2 = pick(v2, a2);
        a3 = pick(v3, a3);
        u = S::bor(u, S::bor(S::bor(S::unord(v0), S::unord(v1)),
                             S::bor(S::unord(v2), S::unord(v3))));
      }
      T lanes[step];
      S::store(lanes, a0);
      S::store(lanes + W, a1);
      S::store(lanes + 2 * W, a2);
      S::store(lanes + 3 * W, a3);
      nan = S::any(u);
      b = lanes[0];
      for (int64_t l = 1; l < step; ++l) b = beats(lanes[l], b) ? lanes[l] : b;
    }
  } else
#endif
  {
    constexpr int kLanes = 16;
    if (n >= kLanes) {
      T acc[kLanes];
      for (int l = 0; l < kLanes; ++l) acc[l] = p[l];
      for (j = kLanes; j + kLanes <= n; j += kLanes)
        for (int l = 0; l < kLanes; ++l) acc[l] = beats(p[j + l], acc[l]) ? p[j + l] : acc[l];
      for (int l = 0; l < kLanes; ++l) b = beats(acc[l], b) ? acc[l] : b;
      if constexpr (std::is_floating_point<T>::value)   // (float and double off x86)
        for (int64_t t = 0; t < j; ++t) nan |= is_nan(p[t]);
    }
  }
  for (; j < n; ++j) {
    b = beats(p[j], b) ? p[j] : b;
    nan |= is_nan(p[j]);
  }
  *has_nan = nan;
  return b;
}

// The best of m contiguous values (k = 1): extreme_value, then the first position
// holding it (ties -> lower index; -0.0 ties +0.0).  A NaN is the best for largest (the
// first NaN wins); for smallest it is the worst, and a row holding one takes the full
// rule in a plain scan (rare).  The branchy scan paid a misprediction per new best:
// 1.5x slower on rows of 20 and 80, 1.3x on rows of 1000 (one thread, float32;
// fastops/_bench/selection.py "topk short rows", k=1).
template <typename T, bool Largest>
inline Entry<T> best_contiguous(const T* p, int64_t m, int64_t offset) {
  using R = Rank<T, Largest>;
  bool nan;
  const T b = extreme_value<T, Largest>(p, m, &nan);
  // (the searches are bounded: another thread may rewrite the row meanwhile; the result
  // is then unspecified, but nothing is read past the row)
  int64_t j = 0;
#if defined(__SSE2__)
  if constexpr (std::is_same<T, float>::value) {
    // short rows: the first match from one mask of the whole row, no loop exit to
    // mispredict (topk 100000x20 k=1, fastops/_bench/selection.py)
    if (!nan && m <= 64) {
      const __m128 bv = _mm_set1_ps(b);
      uint64_t hits = 0;
      for (; j + 4 <= m; j += 4)
        hits |= static_cast<uint64_t>(_mm_movemask_ps(_mm_cmpeq_ps(_mm_loadu_ps(p + j), bv))) << j;
      for (; j < m; ++j) hits |= static_cast<uint64_t>(p[j] == b) << j;
      j = hits ? __builtin_ctzll(hits) : m - 1;  // (no match: another thread rewrote the row)
      return Entry<T>{p[j], j + offset};
    }
  }
#endif
  if (!nan) {
    while (j < m - 1 && !(p[j] == b)) ++j;
  } else if (Largest) {
    while (j < m - 1 && !is_nan(p[j])) ++j;
  } else {
    for (int64_t t = 1; t < m; ++t)
      if (R::value_better(p[t], p[j])) j = t;
  }
  return Entry<T>{p[j], j + offset};
}

// Types that rank_key orders exactly in 32 bits.
template <typename T>
constexpr bool kKey32 =
    sizeof(T) <= 4 && (std::is_integral<T>::value || std::is_same<T, float>::value);

// Types of 8 bytes that rank_key orders exactly in 64 bits.
template <typename T>
constexpr bool kKey64 =
    sizeof(T) == 8 && (std::is_integral<T>::value || std::is_same<T, double>::value);

// The partition path's key type (PartKey): the rank key of kKey32 and kKey64 types,
// else the value itself.
template <typename T>
using PartKeyOf =
    std::conditional_t<kKey32<T>, uint32_t, std::conditional_t<kKey64<T>, uint64_t, T>>;

struct KeyPos {
  uint64_t key, pos;
};

// The partition path's scratch, grown on demand and reused across rows.
template <typename T>
struct SelectScratch {
  // candidates, their permuted copy, the sample: as PartKey's keys
  std::vector<PartKeyOf<T>> vals;
  std::vector<int64_t> pos;   // the candidates' positions in the row
  std::vector<uint64_t> keys, keys2; // sort_index_ordered's packed keys (and radix copy)
  std::vector<KeyPos> pairs, pairs2;  // the same for 8-byte types
  std::vector<Entry<T>> tmp;
  std::vector<Entry<T>> group;  // select_k's group-threshold candidates
};

// An unsigned key U (32 bits for values of 4 bytes or fewer, 64 for 8) that orders as
// Rank does, smaller first: NaN first for largest and last for smallest, -0.0 equal to
// +0.0.  Branch-free, so that a loop of them vectorizes (the short-row kernel converts
// whole rows).
template <typename U, typename T, bool Largest>
inline U rank_key(T v) {
  static_assert(sizeof(T) <= sizeof(U), "a key as wide as the value");
  using S = std::make_signed_t<U>;
  constexpr U kSign = U(1) << (8 * sizeof(U) - 1);
  U u;
  bool nan = false;
  if constexpr (std::is_floating_point<T>::value) {
    static_assert(sizeof(T) == sizeof(U), "the value's own bits");
    const T inf = std::numeric_limits<T>::infinity();
    U b, inf_bits;
    std::memcpy(&b, &v, sizeof b);
    std::memcpy(&inf_bits, &inf, sizeof inf_bits);
    const U mag = b & ~kSign;
    nan = mag > inf_bits;
    b = mag == 0 ? U(0) : b;  // -0.0 ties +0.0
    u = (b & kSign) ? U(~b) : U(b | kSign);
  } else if constexpr (std::is_signed<T>::value) {
    u = static_cast<U>(static_cast<S>(v)) ^ kSign;
  } else {
    u = static_cast<U>(v);
  }
  u = Largest ? U(~u) : u;
  return nan ? (Largest ? U(0) : U(~U(0))) : u;
}


// The partition path's order: the rank key (integer compares, no NaN tests), 32 bits
// for kKey32 types and 64 for kKey64 ones (float64 rows of 200 k=100, C++ harness, one
// thread, on the AMD Zen 1 VM, with the 64-bit keys in sort_index_ordered too: 103 -> 79
// ms); else the values with Rank's comparison.
template <typename T, bool Largest, bool = kKey32<T> || kKey64<T>>
struct PartKey {
  using K = T;
  static inline K of(T v) { return v; }
  static inline bool less(K a, K b) { return Rank<T, Largest>::value_better(a, b); }
};
template <typename T, bool Largest>
struct PartKey<T, Largest, true> {
  using K = PartKeyOf<T>;
  static inline K of(T v) { return rank_key<K, T, Largest>(v); }
  static inline bool less(K a, K b) { return a < b; }
};

// Rows of kKey32 types: every value's rank at once, for rows of up to kRankMax values
// with any k, and of up to kWideRankMax (or as many candidates) where rank_pays.  Lane j
// of a vector of kRankLanes counts the values that beat value j (a smaller key, or an
// equal key at a lower index), one broadcast compare per value, no branch; a value of
// rank r < k goes to out[r] (sorted) or, in index order, to the next slot.  The sorted
// insertion list it replaced on rows of up to 32 mispredicted on most inserts: topk
// 100000x20 k=5 float32 22 -> 9.3 ms on one thread (C++ harness; fastops/_bench/
// selection.py 0.50x ORT); the 16-lane blocks, one at a time against every value, took
// that row to 0.77x the 4-lane registers of each value in turn.  Past 32 values the m^2 /
// kRankLanes compares replace nth_element and the sort of the k winners (select_k).
constexpr int64_t kRankMax = 32;
constexpr int64_t kWideRankMax = 512;
// rank_pays: m^2 <= kRankCost * kRankLanes * k, fitted to the crossovers against the
// partition on the AVX-512 VM (16 lanes; rows of 256 k=44, 300 k=60, 400 k=107, 512
// k=175); the 4-lane baseline build follows it (rows of 128: k=40 1.02x the partition
// where the rule would have ranked at 16 lanes, k=64 0.66 where it ranks at 4).
constexpr int64_t kRankCost = 94;
constexpr int64_t kSampleMin = 256;  // the partition's sample threshold from rows this long
#if defined(__AVX512F__)
constexpr int kRankLanes = 16;
#elif defined(__AVX2__)
constexpr int kRankLanes = 8;
#else
constexpr int kRankLanes = 4;  // SSE2 (GCC's generic vectors elsewhere)
#endif
// The types ranked: 4 bytes or fewer as int32 keys; 8 bytes as int64 keys (half the
// lanes) where the build compares 64-bit lanes natively (AVX2 on; SSE2 has no 64-bit
// compare, which GCC would emulate).
#if defined(__AVX2__)
constexpr bool kRank64 = true;
#else
constexpr bool kRank64 = false;
#endif
template <typename T>
constexpr bool kRanked = kKey32<T> || (kKey64<T> && kRank64);
template <typename T>
using RankKey = std::conditional_t<(sizeof(T) <= 4), int32_t, int64_t>;
template <typename K>
constexpr int kLanesOfKey = kRankLanes * 4 / static_cast<int>(sizeof(K));
template <typename T>
constexpr int kRankLanesOf = kLanesOfKey<RankKey<T>>;
// rank_key as a signed integer (for signed vector compares): the same order.
template <typename T, bool Largest>
inline RankKey<T> rank_key_signed(T v) {
  using U = std::make_unsigned_t<RankKey<T>>;
  return static_cast<RankKey<T>>(rank_key<U, T, Largest>(v) ^ (U(1) << (8 * sizeof(U) - 1)));
}

// rank[j] for keys kv[0:m] (signed rank keys of 4 or 8 bytes, kv and rank padded to a
// multiple of the lanes; the padding's ranks are not counted or set meaningfully).
template <typename K>
inline void ranks_of_keys(const K* kv, int m, int32_t* rank) {
  constexpr int W = kLanesOfKey<K>;
  typedef K vi __attribute__((vector_size(sizeof(K) * W)));
  vi lane;
  for (int l = 0; l < W; ++l) lane[l] = l;
  // Value i beats lane j when key_i < key_j, or key_i == key_j and i < j.  Over the i < j
  // that is 1 - [key_i > key_j]: a block's lanes start at the count of the values before
  // the block and add the -1 masks of key_i > key_j; the values after the block subtract
  // those of key_j > key_i; only the block's own values need the per-lane index test.
  // Two accumulators each (one dependent add a cycle otherwise).
  for (int b = 0; b * W < m; ++b) {
    const int lo = b * W, hi = std::min(m, lo + W);
    vi key, c0 = vi{} + lo, c1 = vi{};
    std::memcpy(&key, kv + lo, sizeof key);
    int i = 0;
    for (; i < lo; i += 2) {  // (lo: a multiple of W, even)
      c0 += (vi{} + kv[i]) > key;
      c1 += (vi{} + kv[i + 1]) > key;
    }
    for (; i < hi; ++i) {
      const vi ki = vi{} + kv[i];
      c0 -= (ki < key) | ((ki == key) & ((vi{} + (i - lo)) < lane));
    }
    for (; i + 1 < m; i += 2) {
      c0 -= key > (vi{} + kv[i]);
      c1 -= key > (vi{} + kv[i + 1]);
    }
    for (; i < m; ++i) c0 -= key > (vi{} + kv[i]);
    const vi cnt = c0 + c1;
    if constexpr (sizeof(K) == 4) std::memcpy(rank + lo, &cnt, sizeof cnt);
    else for (int l = 0; l < W; ++l) rank[lo + l] = static_cast<int32_t>(cnt[l]);
  }
}

// out[0:k] from m ranked entries entry(j) (m <= Cap): by rank (sorted) or, in index
// order, the ones of rank < k; branch-free (a taken-or-not branch per value mispredicted
// like the insertion list).
template <typename T, int64_t Cap, typename EntryOf>
inline void place_by_rank(const int32_t* rank, int m, int64_t k, bool sorted, EntryOf entry,
                          Entry<T>* out) {
  Entry<T> placed[Cap + 1];
  int64_t next = 0;
  for (int j = 0; j < m; ++j) {
    const int64_t slot = sorted ? rank[j] : next;
    placed[slot] = entry(j);
    next += rank[j] < k;
  }
  std::copy(placed, placed + k, out);
}

// The k best of m values read by get (value(j), and an Entry with their position) by
// their ranks; m <= Cap.
template <typename T, bool Largest, int64_t Cap, typename Get>
inline void select_by_rank(Get get, int64_t m, int64_t k, bool sorted, Entry<T>* out) {
  using K = RankKey<T>;
  constexpr int W = kRankLanesOf<T>;
  static_assert(Cap % W == 0, "whole vectors");
  alignas(64) K kv[Cap];
  alignas(64) int32_t rank[Cap];
  T vals[Cap];  // each value read once: the ranks are a permutation of 0 .. m - 1
  const int64_t padded = (m + W - 1) / W * W;
  for (int64_t j = 0; j < m; ++j) {
    vals[j] = get.value(j);
    kv[j] = rank_key_signed<T, Largest>(vals[j]);
  }
  for (int64_t j = m; j < padded; ++j) kv[j] = std::numeric_limits<K>::max();  // never contends
  ranks_of_keys(kv, static_cast<int>(m), rank);
  place_by_rank<T, Cap>(rank, static_cast<int>(m), k, sorted,
                        [&](int j) { return Entry<T>{vals[j], get(j).i}; }, out);
}

// Whether ranking m values for the k best costs less than the other paths (see select_k).
// The x86-64-v4 build's 64-bit ranks on AMD CPUs (8 int64 lanes, which Zen 4 compares as
// two 256-bit halves) count as the 4 lanes of the x86-64-v3 build: Zen 4 VM, in one
// process (scripts/checkout_ab.py), topk 10000x200 float64 k=100 took 29.9 -> 20.9 ms on
// one thread, 16.0 -> 10.5 on two (the partition, as the v3 build).  Counting half the
// 32-bit lanes too was mixed (10000x1000 float32 k=100 0.82x, 1000x10000 k=10 1.10x,
// 500x4000 k=40 1.08x): not done.
template <typename T>
inline bool rank_pays(int64_t m, int64_t k) {
  int64_t lanes = kRankLanesOf<T>;
#if defined(__AVX512F__)
  if (sizeof(RankKey<T>) == 8 && amd_cpu()) lanes /= 2;
#endif
  return m <= kWideRankMax && m * m <= kRankCost * lanes * k;
}

// ------------------------------------------------------------------ short rows, small k
// Contiguous rows of 4-byte kKey32 types (float32, int32, uint32) up to kShortMax long
// with k <= kShortK (per-anchor class scores: 80 / 91 classes, k of 1 to 10), without a
// branch per value:
//  1. the row's signed rank keys (smaller = better), four per SSE2 vector, converted in
//     registers (the last vector overlaps the one before it; its repeated lanes are
//     masked);
//  2. the minimum of each of 8 lanes (2 vectors) for k <= 8, 16 lanes above: each is a
//     distinct value, so the k-th smallest of them, t, has at least k keys at or below
//     it (with m > kRankMax every lane holds values of the row);
//  3. the positions of the keys <= t in index order: a compress through a table of the
//     set bits of each vector's mask (typically k to 2k of them);
//  4. ranks_of_keys over those candidates.
// More than kRankMax candidates (many ties) leave the row to select_k's general paths.
// Before, these rows took the heap (m >= 24 k) or the sorted insertion list, each with
// a mispredicted branch per new best: fastops/_bench/selection.py topk 8400x80 k=2,
// 20000x80 k=5 and 20000x91 k=10 took 1.08 / 4.60 / 11.6 ms back to back, now 0.65 /
// 1.72 / 2.22 (onnxruntime 1.01 / 5.23 / 10.9).  Keys written one by one to a buffer
// and read back as vectors stalled on store forwarding (4x slower than this); k = 1
// stays with best_contiguous, which this was slower than (3.1 against 2.5 ms on
// 100000x20).
constexpr int64_t kShortMax = 128;
constexpr int64_t kShortK = 16;

template <typename T>
constexpr bool kShortRows =
    sizeof(T) == 4 && (std::is_integral<T>::value || std::is_same<T, float>::value);

typedef int32_t KeyVec __attribute__((vector_size(16)));  // SSE2

// rank_key_signed of p[0:4], lane by lane: rank_key spelled in vector operations (a
// change to one is a change to both; test_topk_short_rows_lane_minima compares them).
template <typename T, bool Largest>
inline KeyVec keys4(const T* p) {
  KeyVec b;
  std::memcpy(&b, p, sizeof b);
  const KeyVec lo = KeyVec{} + INT32_MIN;
  if constexpr (std::is_floating_point<T>::value) {
    const KeyVec mag = b & INT32_MAX;
    const KeyVec nan = mag > 0x7f800000;
    b = mag == 0 ? KeyVec{} : b;      // -0.0 ties +0.0
    KeyVec u = b ^ ((b >> 31) | lo);  // rank_key's unsigned order, before Largest
    if (Largest) u = ~u;
    u = nan ? KeyVec{} + (Largest ? 0 : -1) : u;
    return u ^ lo;
  } else if constexpr (std::is_signed<T>::value) {
    return Largest ? ~b : b;
  } else {
    return (Largest ? ~b : b) ^ lo;
  }
}

inline unsigned lane_bits(KeyVec m) {
#if defined(__SSE2__)
  return static_cast<unsigned>(_mm_movemask_ps(_mm_castsi128_ps((__m128i)m)));
#else
  return (m[0] != 0) | (m[1] != 0) << 1 | (m[2] != 0) << 2 | (m[3] != 0) << 3;
#endif
}

template <typename T, bool Largest>
inline bool select_short(const T* p, int64_t m, int64_t k, bool sorted, Entry<T>* out,
                         int64_t offset) {
  // the set lanes of a 4-bit mask, packed into bytes, and their count
  static constexpr uint32_t kLanes[16] = {
      0, 0x0, 0x1, 0x100, 0x2, 0x200, 0x201, 0x20100, 0x3, 0x300, 0x301, 0x30100,
      0x302, 0x30200, 0x30201, 0x3020100};
  constexpr uint64_t kCount = 0x4332322132212110ull;  // nibble b: popcount(b)
  const int nfull = static_cast<int>(m / 4), tail = static_cast<int>(m % 4);
  const int nblk = nfull + (tail > 0), tail0 = static_cast<int>(m) - 4;
  KeyVec key[kShortMax / 4];
  for (int v = 0; v < nfull; ++v) key[v] = keys4<T, Largest>(p + 4 * v);
  const KeyVec lane = KeyVec{0, 1, 2, 3};
  const KeyVec repeated = lane < 4 - tail;  // the last block's lanes already seen
  if (tail) key[nfull] = repeated ? KeyVec{} + INT32_MAX : keys4<T, Largest>(p + tail0);
  // lane minima of 2 (k <= 8) or 4 interleaved vectors
  const int nacc = k <= 8 ? 2 : 4;
  KeyVec acc[4];
  for (int a = 0; a < 4; ++a) acc[a] = KeyVec{} + INT32_MAX;
  for (int v = 0; v < nblk; ++v) {
    KeyVec& x = acc[v & (nacc - 1)];
    x = key[v] < x ? key[v] : x;
  }
  // t = the k-th smallest lane minimum = the largest one with at most k - 1 below it
  alignas(16) int32_t lm[16];
  std::memcpy(lm, acc, sizeof(KeyVec) * nacc);
  KeyVec best = KeyVec{} + INT32_MIN;
  for (int a = 0; a < nacc; ++a) {
    KeyVec below = KeyVec{};
    for (int i = 0; i < 4 * nacc; ++i) below -= (KeyVec{} + lm[i]) < acc[a];
    const KeyVec pick = below < static_cast<int32_t>(k) ? acc[a] : KeyVec{} + INT32_MIN;
    best = pick > best ? pick : best;
  }
  const int32_t t = std::max(std::max(best[0], best[1]), std::max(best[2], best[3]));
  // positions of the keys <= t, in index order (bytes: m <= kShortMax < 256)
  alignas(4) uint8_t pos[kShortMax + 4];
  int c = 0;
  const KeyVec tv = KeyVec{} + t;
  for (int v = 0; v < nblk; ++v) {
    unsigned bits = ~lane_bits(key[v] > tv) & 0xfu;
    const int base = v < nfull ? 4 * v : tail0;
    if (v == nfull) bits &= ~lane_bits(repeated);  // (a key of INT32_MAX ties the masks)
    const uint32_t w = kLanes[bits] + 0x01010101u * static_cast<uint32_t>(base);
    std::memcpy(pos + c, &w, sizeof w);
    c += static_cast<int>((kCount >> (4 * bits)) & 0xf);
  }
  if (c > kRankMax) return false;
  // the key of position q: block q / 4, or lane q - (m - 4) of the overlapping last block
  const int32_t* kf = reinterpret_cast<const int32_t*>(key);
  auto key_at = [&](int q) { return q < 4 * nfull ? kf[q] : kf[4 * nfull + q - tail0]; };
  alignas(64) int32_t ck[kRankMax], rank[kRankMax];
  static_assert(kRankMax % kRankLanes == 0, "whole vectors");
  for (int j = 0; j < kRankMax; ++j) ck[j] = j < c ? key_at(pos[j]) : INT32_MAX;
  ranks_of_keys(ck, c, rank);
  place_by_rank<T, kRankMax>(rank, c, k, sorted,
                   [&](int j) { return Entry<T>{p[pos[j]], pos[j] + offset}; }, out);
  return true;
}

// v sorted stably by key(e)'s low Bytes bytes, unsigned (an LSD radix sort, a byte a
// pass, the passes whose byte is one value skipped); tmp: scratch.  With the elements in
// index order that is the order of (key, index).  v.size() < 2^32.
constexpr int64_t kRadixMin = 192;
template <int Bytes, typename E, typename KeyOf>
inline void radix_sort(std::vector<E>& v, std::vector<E>& tmp, KeyOf key) {
  const size_t n = v.size();
  tmp.resize(n);
  uint32_t count[Bytes][256] = {};
  for (const E& x : v) {
    const uint64_t q = key(x);
    for (int d = 0; d < Bytes; ++d) ++count[d][(q >> (8 * d)) & 0xff];
  }
  E* src = v.data();
  E* dst = tmp.data();
  for (int d = 0; d < Bytes; ++d) {
    uint32_t* c = count[d];
    if (c[(key(src[0]) >> (8 * d)) & 0xff] == n) continue;  // one value: order kept
    uint32_t sum = 0;
    for (int b = 0; b < 256; ++b) {
      const uint32_t t = c[b];
      c[b] = sum;
      sum += t;
    }
    for (size_t i = 0; i < n; ++i) dst[c[(key(src[i]) >> (8 * d)) & 0xff]++] = src[i];
    std::swap(src, dst);
  }
  if (src != v.data()) v.swap(tmp);
}

template <typename T>
struct EntryArray {
  const Entry<T>* e;
  static constexpr int64_t offset = 0;  // (never contiguous: best_contiguous is not used)
  inline T value(int64_t j) const { return e[j].v; }
  inline Entry<T> operator()(int64_t j) const { return e[j]; }
  inline const T* contiguous() const { return nullptr; }
};

// Sort out[0:k], which is in ascending index order, best first.  Up to kRankSortMax
// winners of a ranked type: their ranks (select_by_rank; no branch to mispredict).  On
// the AMD Zen 1 VM (AVX2), C++ harness, one thread, ns per value, std::sort / ranks:
// float64 rows of 200 k=100 39.6 / 33.1, 1000 k=100 13.9 / 13.0; float32 1000 k=100 11.8
// / 10.8; at k=300 the ranks lost (float64 10.3 / 12.3, float32 13.1 / 14.2).  Else, for
// values of 4 bytes or fewer, one sort of (key << 32 | position) integers, then a
// permutation: equal keys keep their order, which is the index order (the Rank
// comparator on 16-byte entries took 30% of topk 10000x1000 k=100, fastops/_bench/
// selection.py); from kRadixMin winners a radix sort (k=250 0.82-0.86x std::sort, 1000
// 0.42, k=100-200 0.98-1.02).  8-byte values: (key, position) pairs, radix sorted by the
// key from kRadixMin.
constexpr int64_t kRankSortMax = 128;

template <typename T, bool Largest>
inline void sort_index_ordered(Entry<T>* out, int64_t k, SelectScratch<T>& s) {
  if constexpr (kRanked<T>) {
    if (k <= kRankSortMax) {
      s.tmp.assign(out, out + k);
      select_by_rank<T, Largest, kWideRankMax>(EntryArray<T>{s.tmp.data()}, k, k, true, out);
      return;
    }
  }
  if constexpr (kKey32<T>) {
    if (k < (int64_t(1) << 32)) {  // (positions, and the radix sort's counts, in 32 bits)
      s.keys.resize(static_cast<size_t>(k));
      for (int64_t t = 0; t < k; ++t)
        s.keys[t] = (static_cast<uint64_t>(rank_key<uint32_t, T, Largest>(out[t].v)) << 32) |
                    static_cast<uint64_t>(t);
      if (k >= kRadixMin) radix_sort<4>(s.keys, s.keys2, [](uint64_t x) { return x >> 32; });
      else std::sort(s.keys.begin(), s.keys.end());
      s.tmp.assign(out, out + k);
      for (int64_t t = 0; t < k; ++t) out[t] = s.tmp[s.keys[t] & 0xffffffffu];
      return;
    }
  }
  if constexpr (kKey64<T>) {
    s.pairs.resize(static_cast<size_t>(k));
    for (int64_t t = 0; t < k; ++t)
      s.pairs[t] = KeyPos{rank_key<uint64_t, T, Largest>(out[t].v), static_cast<uint64_t>(t)};
    if (k >= kRadixMin && k < (int64_t(1) << 32))   // (the radix sort's counts: 32 bits)
      radix_sort<8>(s.pairs, s.pairs2, [](const KeyPos& e) { return e.key; });
    else
      std::sort(s.pairs.begin(), s.pairs.end(), [](const KeyPos& a, const KeyPos& b) {
        return a.key < b.key || (a.key == b.key && a.pos < b.pos);
      });
    s.tmp.assign(out, out + k);
    for (int64_t t = 0; t < k; ++t) out[t] = s.tmp[s.pairs[t].pos];
    return;
  }
  std::sort(out, out + k, Rank<T, Largest>());
}

// The values of row `get` at positions pos[0:c] (a partition's candidates).
template <typename T, typename Get>
struct Candidates {
  Get get;
  const int64_t* pos;
  inline T value(int64_t t) const { return get.value(pos[t]); }
  inline Entry<T> operator()(int64_t t) const { return get(pos[t]); }
};

// float32 rows of 2G to kGroupMax values and k <= G / 2: the k-th best of the G group
// extremes (group i: the values at j % G == i, one vector lane each) is a threshold that
// at least k values reach (the k best groups' extremes are k distinct values), and only
// a few more than k do while G >= 2k (rows of 1000 normal values: k=16 of 32 groups 18
// on average, of 64 groups k=32 43, of 128 groups k=64 85; k=32 of 32 groups would take
// 123); one pass of vector compares gathers them, with their positions, in index order.
// Returns their count, or -1 where the row holds a NaN (the heap path ranks those).  Not
// inlined: inside select_k it slowed the short rows that never reach it (topk 8400x80
// k=2 1.11x, 20000x91 k=10 1.04x).
//
// Measured on the Intel AVX-512 VM, one thread, float32 normal rows, ns per value, the
// path these rows took before / this: rows of 1000 k=3 0.53 (the heap with better_bits)
// / 0.44, k=10 1.35 (the same) / 0.76, k=16 2.15 (the same) / 1.08; 256 k=10 4.4 (the
// insertion list) / 2.1; 200 k=16 6.4 (the same) / 3.8; 128 k=16 7.7 (the same, after
// select_short gives up) / 5.9; 16384 k=10 0.40 (the heap before better_bits) / 0.23;
// 32768 k=10 0.19 (the heap with better_bits) / 0.21 with this (so the heap keeps longer
// rows).  The sweep rows topk 2000x1000 k=10 and 256x1000 k=5 (fastops/_bench/
// selection.py) are the classifier shapes.
constexpr int64_t kGroupMax = 16384;
constexpr int64_t kGroupK = 64;  // with 128 groups
template <int G>
constexpr int64_t kGroupMin = 2 * G;

template <bool Largest, int G>
__attribute__((noinline)) int64_t group_candidates(const float* p, int64_t m, int64_t k, int64_t offset,
                                std::vector<Entry<float>>& cand) {
  static_assert(G % 16 == 0, "whole vectors");
  auto better = [](float a, float b) { return Largest ? a > b : a < b; };
  alignas(64) float g[G];
  int64_t j = G;
  bool nan = false;
#if defined(__AVX512F__)
  constexpr int V = G / 16;
  __m512 a[V];
  __mmask16 un = 0;
  for (int i = 0; i < V; ++i) {
    a[i] = _mm512_loadu_ps(p + 16 * i);
    un |= _mm512_cmp_ps_mask(a[i], a[i], _CMP_UNORD_Q);
  }
  for (; j + G <= m; j += G)
    for (int i = 0; i < V; ++i) {
      const __m512 v = _mm512_loadu_ps(p + j + 16 * i);
      un |= _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
      a[i] = Largest ? _mm512_max_ps(a[i], v) : _mm512_min_ps(a[i], v);
    }
  for (int i = 0; i < V; ++i) _mm512_store_ps(g + 16 * i, a[i]);
  nan = un != 0;
#elif defined(__AVX2__)
  constexpr int V = G / 8;
  __m256 a[V], un = _mm256_setzero_ps();
  for (int i = 0; i < V; ++i) {
    a[i] = _mm256_loadu_ps(p + 8 * i);
    un = _mm256_or_ps(un, _mm256_cmp_ps(a[i], a[i], _CMP_UNORD_Q));
  }
  for (; j + G <= m; j += G)
    for (int i = 0; i < V; ++i) {
      const __m256 v = _mm256_loadu_ps(p + j + 8 * i);
      un = _mm256_or_ps(un, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
      a[i] = Largest ? _mm256_max_ps(a[i], v) : _mm256_min_ps(a[i], v);
    }
  for (int i = 0; i < V; ++i) _mm256_store_ps(g + 8 * i, a[i]);
  nan = _mm256_movemask_ps(un) != 0;
#elif defined(__SSE2__)
  constexpr int V = G / 4;
  __m128 a[V], un = _mm_setzero_ps();
  for (int i = 0; i < V; ++i) {
    a[i] = _mm_loadu_ps(p + 4 * i);
    un = _mm_or_ps(un, _mm_cmpunord_ps(a[i], a[i]));
  }
  for (; j + G <= m; j += G)
    for (int i = 0; i < V; ++i) {
      const __m128 v = _mm_loadu_ps(p + j + 4 * i);
      un = _mm_or_ps(un, _mm_cmpunord_ps(v, v));
      a[i] = Largest ? _mm_max_ps(a[i], v) : _mm_min_ps(a[i], v);
    }
  for (int i = 0; i < V; ++i) _mm_store_ps(g + 4 * i, a[i]);
  nan = _mm_movemask_ps(un) != 0;
#else
  for (int i = 0; i < G; ++i) g[i] = p[i];
  for (int64_t t = 0; t < m; ++t) nan |= is_nan(p[t]);  // (a NaN never wins `better`)
  for (; j + G <= m; j += G)
    for (int i = 0; i < G; ++i) g[i] = better(p[j + i], g[i]) ? p[j + i] : g[i];
#endif
  for (int64_t t = j; t < m; ++t) {
    nan |= is_nan(p[t]);
    float& x = g[t % G];
    x = better(p[t], x) ? p[t] : x;
  }
  if (nan) return -1;
  // the k-th best extreme: the best one that at least k extremes reach (branch free, the
  // counts of all G at once in vectors, one broadcast extreme at a time: counting one
  // extreme's reach at a time ends each in a horizontal sum, std::nth_element over 32
  // extremes took half the time)
  alignas(64) int32_t reach[G] = {};
  for (int q = 0; q < G; ++q) {
    const float x = g[q];
    for (int i = 0; i < G; ++i) reach[i] += !better(g[i], x);
  }
  float thr = g[0];
  for (int i = 0; i < G; ++i) thr = better(thr, g[i]) ? g[i] : thr;  // the worst
  for (int i = 0; i < G; ++i) thr = reach[i] >= k && better(g[i], thr) ? g[i] : thr;
  if (static_cast<int64_t>(cand.size()) < m) cand.resize(static_cast<size_t>(m));
  int64_t c = 0;
  auto take = [&](uint64_t bits, int64_t base) {
    for (; bits; bits &= bits - 1) {
      const int64_t q = base + __builtin_ctzll(bits);
      cand[c++] = Entry<float>{p[q], q + offset};
    }
  };
  j = 0;
#if defined(__AVX512F__)
  const __m512 tv = _mm512_set1_ps(thr);
  for (; j + 16 <= m; j += 16)
    take(_mm512_cmp_ps_mask(_mm512_loadu_ps(p + j), tv, Largest ? _CMP_GE_OQ : _CMP_LE_OQ), j);
#elif defined(__AVX2__)
  const __m256 tv = _mm256_set1_ps(thr);
  for (; j + 8 <= m; j += 8)
    take(static_cast<uint64_t>(_mm256_movemask_ps(
             _mm256_cmp_ps(_mm256_loadu_ps(p + j), tv, Largest ? _CMP_GE_OQ : _CMP_LE_OQ))),
         j);
#elif defined(__SSE2__)
  const __m128 tv = _mm_set1_ps(thr);
  for (; j + 4 <= m; j += 4) {
    const __m128 v = _mm_loadu_ps(p + j);
    take(static_cast<uint64_t>(_mm_movemask_ps(Largest ? _mm_cmpge_ps(v, tv) : _mm_cmple_ps(v, tv))), j);
  }
#endif
  for (; j < m; ++j)
    if (!better(thr, p[j])) cand[c++] = Entry<float>{p[j], j + offset};
  return c;
}

// group_candidates with the fewest groups that hold at least 2k, where the row is long
// enough for them (-2: no group path for this row)
template <bool Largest>
inline int64_t group_candidates_for(const float* p, int64_t m, int64_t k, int64_t offset,
                                    std::vector<Entry<float>>& cand) {
  if (m > kGroupMax) return -2;
  if (k <= 16 && m >= kGroupMin<32>) return group_candidates<Largest, 32>(p, m, k, offset, cand);
  if (k <= 32 && m >= kGroupMin<64>) return group_candidates<Largest, 64>(p, m, k, offset, cand);
  if (k <= 64 && m >= kGroupMin<128>) return group_candidates<Largest, 128>(p, m, k, offset, cand);
  return -2;
}

// The k-th smallest (0-based) of the keys a[0:n] (unsigned rank keys); a and tmp, n
// each, are both overwritten.  Quickselect on a branch-free three-way partition: each
// key is stored at the low and at the high end of the other buffer and only the end it
// belongs to advances (keys equal to the pivot are dropped and counted), so the two
// buffers take turns.  std::nth_element mispredicted most of its compares: topk float64
// rows of 200 k=100 spent 3.7 us of a row's 7.9 in it on the AMD Zen 1 VM.  Past
// kSelectRounds rounds (a pivot sequence made to split badly) std::nth_element takes
// the rest.
constexpr int64_t kSelectSmall = 16;
constexpr int kSelectRounds = 64;
template <typename K>
inline K kth_smallest_key(K* a, K* tmp, int64_t n, int64_t k) {
  static_assert(std::is_unsigned<K>::value, "rank keys");
  for (int round = 0; n > kSelectSmall; ++round) {
    if (round == kSelectRounds) {
      std::nth_element(a, a + k, a + n);
      return a[k];
    }
    // the pivot: the median of three (branch free)
    auto med3 = [](K x, K y, K z) {
      return std::max(std::min(x, y), std::min(std::max(x, y), z));
    };
    const K p = med3(a[n / 4], a[n / 2], a[n - 1 - n / 4]);
    int64_t lo = 0, hi = n - 1;  // tmp[0:lo] < p, tmp[hi + 1:n] > p
    for (int64_t i = 0; i < n; ++i) {
      const K v = a[i];
      tmp[lo] = v;
      tmp[hi] = v;
      lo += v < p;
      hi -= p < v;
    }
    if (k < lo) {
      n = lo;
    } else if (k <= hi) {
      return p;
    } else {
      tmp += hi + 1;
      a += hi + 1;
      k -= hi + 1;
      n -= hi + 1;
    }
    std::swap(a, tmp);
  }
  // a few keys: the one with k or fewer keys below it and more than k at or below it
  K kth = 0;
  for (int64_t i = 0; i < n; ++i) {
    int64_t below = 0, upto = 0;
    for (int64_t j = 0; j < n; ++j) {
      below += a[j] < a[i];
      upto += a[j] <= a[i];
    }
    kth = below <= k && k < upto ? a[i] : kth;
  }
  return kth;
}

// Integer rows of the heap path: the k-th best of kFloorGroups group extremes (group i:
// the values at j % kFloorGroups == i of the first kFloorBytes of the row) is reached by
// at least k values of the row, so a value worse than it is never among the k best.
// Sets `floor` to a value that only such values fail to beat; leaves it where none
// exists (the k-th extreme is the type's worst value) or k > kFloorGroups.  With the vector
// block tests and bit-visited blocks below: topk 2000x20000 uint8 k=10, 2 threads, 5.2
// -> 2.3 ms; int16 / int32 / int64 rows of 20000 0.55-0.61 / 0.72-0.74 / 0.85-0.92
// (docs/performance.md, fifty-fourth session).
constexpr int kFloorGroups = 64;
constexpr int64_t kFloorBytes = int64_t(64) << 10;
template <typename T, bool Largest>
inline void row_floor(const T* p, int64_t m, int64_t k, T& floor) {
  const int64_t span = std::min<int64_t>(m, kFloorBytes / sizeof(T));
  if (k > kFloorGroups || span < kFloorGroups) return;
  using IV = IntVec<T>;
  constexpr int kV = kFloorGroups / IV::kLanes;
  typename IV::V acc[kV];
  for (int v = 0; v < kV; ++v) acc[v] = IV::load(p + v * IV::kLanes);
  for (int64_t j = kFloorGroups; j + kFloorGroups <= span; j += kFloorGroups)
    for (int v = 0; v < kV; ++v)
      acc[v] = IV::template best<Largest>(acc[v], IV::load(p + j + v * IV::kLanes));
  T g[kFloorGroups];
  std::memcpy(g, acc, sizeof(g));
  auto better = [](T a, T b) { return Largest ? a > b : a < b; };
  std::nth_element(g, g + (k - 1), g + kFloorGroups, better);
  const T kth = g[k - 1];
  constexpr T worst = Largest ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max();
  if (kth != worst) floor = Largest ? static_cast<T>(kth - 1) : static_cast<T>(kth + 1);
}

template <typename T, bool Largest, typename Get>
inline void select_k(Get get, int64_t m, int64_t k, bool sorted, Entry<T>* out,
                     SelectScratch<T>& scratch) {
  using R = Rank<T, Largest>;
  if (k == 0) return;
  if constexpr (kShortRows<T>) {
    if (k > 1 && k <= kShortK && m > kRankMax && m <= kShortMax) {
      if (const T* p = get.contiguous())
        if (select_short<T, Largest>(p, m, k, sorted, out, get.offset)) return;
    }
  }
  if (k == 1) {  // linear scan
    if (const T* p = get.contiguous()) {
      out[0] = best_contiguous<T, Largest>(p, m, get.offset);
      return;
    }
    Entry<T> best = get(0);
    for (int64_t j = 1; j < m; ++j) {
      T v = get.value(j);
      if (R::value_better(v, best.v)) best = get(j);
    }
    out[0] = best;
    return;
  }
  if constexpr (std::is_same_v<T, float>) {
    if (k <= kGroupK) {
      if (const T* p = get.contiguous()) {
        const int64_t c = group_candidates_for<Largest>(p, m, k, get.offset, scratch.group);
        // (0 <= c < k only where another thread rewrote the row meanwhile: the heap path)
        if (c >= k) {
          select_k<T, Largest>(EntryArray<T>{scratch.group.data()}, c, k, sorted, out, scratch);
          return;
        }
      }
    }
  }
  // Rows with k past the short-row and group paths: the ranks of every value where they
  // pay (rank_pays) and the row is too short for the partition's sample or k is at
  // least half of it (the sample's candidates are then most of the row).  B / A against
  // the partition (nth_element and the sort of the k winners), one process, 2 threads,
  // medians of 15: rows of 33-64 k=17-64 0.15-0.26; 100 k=17-50 0.27-0.41; 128 k=40-128
  // 0.21-0.36; 200 k=48-200 0.27-0.56; 256-511 k=m 0.31-0.49.
  if constexpr (kRanked<T>) {
    if (k > kShortK && rank_pays<T>(m, k) && (m < kSampleMin || 2 * k >= m)) {
      select_by_rank<T, Largest, kWideRankMax>(get, m, k, sorted, out);
      return;
    }
  }
  if (k * kHeapRatio <= m) {  // heap of the k best; later equal values never displace (ties -> lower index)
    for (int64_t j = 0; j < k; ++j) out[j] = get(j);
    for (int64_t p = k / 2 - 1; p >= 0; --p) heap_sift_down<T, Largest>(out, k, p);
    T thr = out[0].v;
    // floor: values that do not beat it are never among the k best; without a row floor
    // the first threshold, which thr never ranks below
    T floor = thr;
    if constexpr (kIntScan<T>) {
      if (const T* p = get.contiguous()) row_floor<T, Largest>(p, m, k, floor);
    }
    // gate: thr, or the row's floor while that is better
    T gate = R::value_better(floor, thr) ? floor : thr;
    auto consider = [&](int64_t j) {
      T v = get.value(j);
      if (R::value_better(v, gate)) {
        out[0] = get(j);
        heap_sift_down<T, Largest>(out, k, 0);
        thr = out[0].v;
        gate = R::value_better(floor, thr) ? floor : thr;
      }
    };
    int64_t j = k;
    // Contiguous rows: once the heap is warm almost no element beats the threshold, so
    // test 64 at a time with a branch-free (vectorized) check and skip whole blocks.
    // (topk 2000x20000 uint8 k=10: 31 ms -> 10 ms on the 2-core CI machine.)
    // float32 visits only the values that beat the threshold the block started with
    // (better_bits) instead of walking each block that holds one, value by value (most
    // blocks of rows of a few thousand do): one thread, rows of 1000 k=10 2.07 -> 1.35
    // ns a value, rows of 10000 0.53 -> 0.31.
    if (const T* p = get.contiguous()) {
      for (; j + 64 <= m; j += 64) {
        if constexpr (std::is_same_v<T, float>) {
          for (uint64_t bits = R::better_bits(p + j, thr); bits; bits &= bits - 1)
            consider(j + __builtin_ctzll(bits));
        } else {
          if (!R::any_better(p + j, gate)) continue;
          if constexpr (kIntScan<T>) {
            // the values that beat the gate the vector started with (consider checks
            // again against the gate it meets)
            using IV = IntVec<T>;
            for (int v = 0; v < 64; v += IV::kLanes)
              for (uint32_t bits = IV::template beat_bits<Largest>(p + j + v, gate); bits;
                   bits &= bits - 1)
                consider(j + v + __builtin_ctz(bits) / static_cast<int>(sizeof(T)));
          } else {
            for (int64_t b = j; b < j + 64; ++b) consider(b);
          }
        }
      }
    }
    for (; j < m; ++j) consider(j);
    if (sorted) std::sort(out, out + k, R());
    else sort_by_index(out, k);
    return;
  }
  if constexpr (kRanked<T>) {
    if (m <= kRankMax) {
      select_by_rank<T, Largest, kRankMax>(get, m, k, sorted, out);
      return;
    }
  }
  if (k <= kInsertMax) {  // short rows, small k: a sorted list of the k best
    int64_t kept = 0;
    for (int64_t j = 0; j < m; ++j) {
      const T v = get.value(j);
      if (kept == k && !R::value_better(v, out[k - 1].v)) continue;
      // the worst kept falls off a full list; v goes after every value it does not beat
      // (equal values keep their lower indices first)
      int64_t p = kept < k ? kept++ : k - 1;
      for (; p > 0 && R::value_better(v, out[p - 1].v); --p) out[p] = out[p - 1];
      out[p] = get(j);
    }
    if (!sorted) sort_by_index(out, k);
    return;
  }
  // Partition: the k-th best value by nth_element over values alone (a quarter of the
  // bytes of (value, index) entries to move), then one pass in index order that keeps
  // the values better than it and its ties, lowest index first.  On long rows both run
  // on candidates only: the values that rank at or above a threshold taken from an
  // evenly strided sample a few deviations below the k-th's expected rank, kept with
  // their positions by a branch-free filter; when fewer than k pass (unlikely but
  // possible), on every value.  (topk 10000x1000 k=100 and 64x20000 k=2000, fastops/
  // _bench/selection.py: nth_element over every value was 60% of the call.)  Values of
  // 4 bytes or fewer are handled as their uint32 rank keys (PartKey), and the keep pass
  // is branch free: topk 10000x1000 k=100 float32, C++ harness, 119 -> 79 ms on one
  // thread, 60 -> 40 ms on two (callgrind had put ~1000 mispredicted branches per row).
  // Where the candidates' ranks pay (rank_pays), those replace nth_element and the sort:
  // topk 10000x1000 k=100 0.73x, rows of 400 k=65-100 0.48-0.50x (the sample from rows
  // of kSampleMin = 256 for this; it began at 512).
  using PK = PartKey<T, Largest>;
  using K = typename PK::K;
  const int64_t n_sample = m >= kSampleMin ? std::min<int64_t>(1024, std::max<int64_t>(64, m / 32)) : 0;
  if (static_cast<int64_t>(scratch.vals.size()) < 3 * m + n_sample)
    scratch.vals.resize(3 * m + n_sample);
  K* cand = scratch.vals.data();  // [0, m): candidates' keys in index order
  K* work = cand + m;             // [m, 3m): their copy and kth_smallest_key's other buffer
  auto less = [](K a, K b) { return PK::less(a, b); };
  // the q-th smallest of the keys a[0:n] (tmp: the other buffer, n keys)
  auto kth_of = [&](K* a, K* tmp, int64_t n, int64_t q) {
    if constexpr (std::is_unsigned<K>::value) {
      return kth_smallest_key(a, tmp, n, q);
    } else {
      std::nth_element(a, a + q, a + n, less);
      return a[q];
    }
  };
  int64_t c = 0;
  if (n_sample) {
    if (static_cast<int64_t>(scratch.pos.size()) < m) scratch.pos.resize(m);
    int64_t* pos = scratch.pos.data();
    K* sample = cand + 3 * m;
    for (int64_t t = 0; t < n_sample; ++t) sample[t] = PK::of(get.value(t * m / n_sample));
    const double expect = static_cast<double>(k) * n_sample / m;
    const int64_t q = static_cast<int64_t>(expect + 3 * std::sqrt(expect) + 3);
    if (q < n_sample) {
      const K thr = kth_of(sample, work, n_sample, q);
      for (int64_t j = 0; j < m; ++j) {
        const K v = PK::of(get.value(j));
        cand[c] = v;
        pos[c] = j;
        c += !PK::less(thr, v);
      }
    }
  }
  const bool every = c < k;
  if constexpr (kRanked<T>) {
    if (!every && rank_pays<T>(c, k)) {  // the candidates' ranks: no nth_element, no sort
      const int64_t* pos = scratch.pos.data();
      select_by_rank<T, Largest, kWideRankMax>(Candidates<T, Get>{get, pos}, c, k, sorted, out);
      return;
    }
  }
  if (every) {
    for (int64_t j = 0; j < m; ++j) cand[j] = PK::of(get.value(j));
    c = m;
  }
  std::copy(cand, cand + c, work);
  const K kth = kth_of(work, work + c, c, k - 1);
  int64_t ties = k;  // the ties of kth that fit: k minus the values better than it
  for (int64_t t = 0; t < c; ++t) ties -= PK::less(cand[t], kth);
  // Keep, in index order, the values better than kth and its first `ties` ties; branch
  // free (about 40% of the candidates are kept: a branch per candidate mispredicted).
  int64_t got = 0;
  for (int64_t t = 0; t < c && got < k; ++t) {
    const K v = cand[t];
    const bool tie = ties > 0 && !PK::less(kth, v) && !PK::less(v, kth);
    out[got] = get(every ? t : scratch.pos[t]);
    got += PK::less(v, kth) | tie;
    ties -= tie;
  }
  // (got < k only when another thread rewrote the row meanwhile: unspecified, but set)
  for (; got < k; ++got) out[got] = get(m - 1);
  if (sorted) sort_index_ordered<T, Largest>(out, k, scratch);
}

template <typename T>
struct StridedRow {
  const T* p;
  int64_t s;
  int64_t offset;  // index of p[0] within the full row
  inline T value(int64_t j) const { return p[j * s]; }
  inline Entry<T> operator()(int64_t j) const { return Entry<T>{p[j * s], j + offset}; }
  inline const T* contiguous() const { return s == 1 ? p : nullptr; }
};

template <typename T, bool Largest>
void topk_impl(const T* x, int64_t outer, int64_t n, int64_t inner, int64_t s_outer,
               int64_t s_n, int64_t s_inner, int64_t k, bool sorted, T* values,
               int64_t* indices, int nthreads) {
  const int64_t rows = outer * inner;
  // One long row (or fewer rows than threads): split each row into chunks, select k
  // per chunk in parallel, then select k of the chunk winners.  Exact, because each
  // global winner is a winner of its own chunk.
  int chunks = 1;
  if (rows < nthreads && n >= (int64_t(1) << 17) && nthreads > 1) {
    int64_t by_len = n / (k > 0 ? 4 * k : 1);
    chunks = static_cast<int>(std::min<int64_t>(nthreads, by_len));
    if (chunks < 1) chunks = 1;
  }
  auto emit = [&](int64_t o, int64_t j, const Entry<T>* best) {
    T* vo = values + o * k * inner + j;
    int64_t* io = indices + o * k * inner + j;
    for (int64_t t = 0; t < k; ++t) {
      vo[t * inner] = best[t].v;
      io[t * inner] = best[t].i;
    }
  };
  if (chunks > 1) {
    for (int64_t r = 0; r < rows; ++r) {
      const T* row = x + (r / inner) * s_outer + (r % inner) * s_inner;
      const int64_t len = (n + chunks - 1) / chunks;
      std::vector<Entry<T>> cand(static_cast<size_t>(chunks) * k);
      std::vector<int64_t> got(chunks, 0);
      std::vector<Padded<SelectScratch<T>>> scratches(static_cast<size_t>(chunks));
      parallel_for(chunks, 1, chunks, [&](int64_t c0, int64_t c1, int slot) {
        for (int64_t c = c0; c < c1; ++c) {
          int64_t b = c * len, e = std::min(n, b + len);
          int64_t m = e - b, kk = std::min(k, m);
          if (m > 0) {
            StridedRow<T> get{row + b * s_n, s_n, b};
            select_k<T, Largest>(get, m, kk, false, cand.data() + c * k, scratches[slot].v);
          }
          got[c] = m > 0 ? kk : 0;
        }
      });
      int64_t total = 0;
      for (int c = 0; c < chunks; ++c) {  // compact candidates in chunk order
        std::memmove(cand.data() + total, cand.data() + c * k, sizeof(Entry<T>) * got[c]);
        total += got[c];
      }
      std::vector<Entry<T>> best(k);
      SelectScratch<T> scratch;
      select_k<T, Largest>(EntryArray<T>{cand.data()}, total, k, sorted, best.data(), scratch);
      emit(r / inner, r % inner, best.data());
    }
    return;
  }
  const int nt = threads_for(work_product(rows, n), nthreads);
  if (k == 1 && s_n == 1) {
    // contiguous rows, k = 1: best_contiguous inlined, output r is row r (a call to
    // select_k and the emit loop per row were a third of topk 100000x20 k=1)
    parallel_for(rows, chunk_for(rows, nt), nt, [&](int64_t r0, int64_t r1, int) {
      int64_t o = r0 / inner, j = r0 % inner;
      for (int64_t r = r0; r < r1; ++r) {
        const Entry<T> e = best_contiguous<T, Largest>(x + o * s_outer + j * s_inner, n, 0);
        values[r] = e.v;
        indices[r] = e.i;
        if (++j == inner) {
          j = 0;
          ++o;
        }
      }
    });
    return;
  }
  // per-thread heaps and partition scratch (allocated by the thread that uses them)
  std::vector<Padded<std::vector<Entry<T>>>> bests(static_cast<size_t>(nt));
  std::vector<Padded<SelectScratch<T>>> scratches(bests.size());
  parallel_for(rows, chunk_for(rows, nt), nt, [&](int64_t r0, int64_t r1, int slot) {
    std::vector<Entry<T>>& best = bests[slot].v;
    best.resize(static_cast<size_t>(k));
    // (o, j) of row r counted along: two 64-bit divisions per row cost as much as
    // scanning a row of 20 elements
    int64_t o = r0 / inner, j = r0 % inner;
    for (int64_t r = r0; r < r1; ++r) {
      const T* row = x + o * s_outer + j * s_inner;
      select_k<T, Largest>(StridedRow<T>{row, s_n, 0}, n, k, sorted, best.data(),
                           scratches[slot].v);
      emit(o, j, best.data());
      if (++j == inner) {
        j = 0;
        ++o;
      }
    }
  });
}

template <typename T>
void topk(const T* x, int64_t outer, int64_t n, int64_t inner, int64_t s_outer, int64_t s_n,
          int64_t s_inner, int64_t k, bool largest, bool sorted, T* values, int64_t* indices,
          int nthreads) {
  if (largest)
    topk_impl<T, true>(x, outer, n, inner, s_outer, s_n, s_inner, k, sorted, values, indices,
                       nthreads);
  else
    topk_impl<T, false>(x, outer, n, inner, s_outer, s_n, s_inner, k, sorted, values, indices,
                        nthreads);
}

// ----------------------------------------------------------------------- cummax/cummin
// torch's rule: take x when x is NaN, or when the running value is not NaN and
// x >= running (cummax) / x <= running (cummin).  Ties therefore move the index to the
// later position; after a NaN the value stays NaN and the index follows later NaNs.
template <typename T, bool Max>
inline bool cum_take(T x, T cur) {
  if (Max) return is_nan(x) || (!is_nan(cur) && x >= cur);
  return is_nan(x) || (!is_nan(cur) && x <= cur);
}

// Whether any of kCumBlock contiguous values would be taken against the running cur:
// exact (cum_take's rule: x >= cur (<=) or x NaN; against a NaN cur, x NaN), branch-free
// and vectorizable, so the rows' scans skip whole blocks where nothing is taken (the
// common case on iid data once the running value is warm, and inside a chunk whose carry
// already holds the lane's extreme).
constexpr int64_t kCumBlock = 32;  // 32 and 64 measured alike, 16 slower
constexpr int64_t kCumColumns = 8192;  // columns scanned together along axis n (cumext_scan)

template <typename T, bool Max>
inline bool cum_any_take(const T* p, T cur) {
  int any = 0;
  for (int64_t k = 0; k < kCumBlock; ++k) {
    if (Max) any |= (p[k] >= cur) | is_nan(p[k]);
    else any |= (p[k] <= cur) | is_nan(p[k]);
  }
  return any != 0;
}

// The final running pair of a contiguous row (no carry), without the scan: the rule
// takes every NaN and every value >= (<=) the running one, so the row ends on its last
// NaN if it has one, else on the last position equal to its max (min): extreme_value,
// then a backward search.  The summary pass of fastops.dask.cummax along rows ran at the
// scan's speed before (dask cummax axis=1, fastops/_bench/dask.py).
template <typename T, bool Max>
inline int64_t cum_last_contiguous(const T* p, int64_t n) {
  bool nan;
  const T b = extreme_value<T, Max>(p, n, &nan);
  // (bounded: another thread may rewrite the row meanwhile; the result is then
  // unspecified, but nothing is read outside the row)
  int64_t j = n - 1;
  if (nan) {
    while (j > 0 && !is_nan(p[j])) --j;
  } else {
    while (j > 0 && !(p[j] == b)) --j;
  }
  return j;
}

// One row of the column scan: for j in [j0, j1), (vi, ii)[j] = (x, gi) where cum_take
// takes x against (vp, ip)[j], else (vp, ip)[j]; vi / ii may be vp / ip (in place).
// SSE2 for float and double on contiguous rows: the loop mixes the values' width with
// 8-byte indices, which the compiler leaves scalar on the baseline build (cummax
// 4096x4096 float32 axis=0, fastops/_bench/selection.py).  The selects are bitwise, so
// the bits (NaN payloads, signed zeros) are the scalar loop's.
template <typename T, bool Max>
inline void cum_row_step(const T* xi, int64_t s_inner, const T* vp, const int64_t* ip,
                         T* vi, int64_t* ii, int64_t gi, int64_t j0, int64_t j1) {
  int64_t j = j0;
#if defined(__AVX512F__)
  // x86-64-v4 build: 16 floats a step, the take mask in a k register.  The SSE2 loop
  // alone ran 10 % slower in that build than in the baseline (cummax 4096x4096 float32
  // axis=0, 2 threads, scripts/simd_ab.py).
  if constexpr (std::is_same<T, float>::value) {
    if (s_inner == 1) {
      const __m512i g = _mm512_set1_epi64(gi);
      for (; j + 16 <= j1; j += 16) {
        const __m512 v = _mm512_loadu_ps(xi + j), c = _mm512_loadu_ps(vp + j);
        const __mmask16 take = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q) |
                               _mm512_cmp_ps_mask(v, c, Max ? _CMP_GE_OQ : _CMP_LE_OQ);
        const __m512i p0 = _mm512_loadu_si512(ip + j), p1 = _mm512_loadu_si512(ip + j + 8);
        _mm512_storeu_ps(vi + j, _mm512_mask_blend_ps(take, c, v));
        _mm512_storeu_si512(ii + j, _mm512_mask_blend_epi64(static_cast<__mmask8>(take), p0, g));
        _mm512_storeu_si512(ii + j + 8,
                            _mm512_mask_blend_epi64(static_cast<__mmask8>(take >> 8), p1, g));
      }
    }
  }
#endif
#if defined(__SSE2__)
  if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value) {
    if (s_inner == 1) {
      using S = Sse<T>;
      using V = typename S::V;
      const __m128i g = _mm_set1_epi64x(gi);
      for (; j + S::kWidth <= j1; j += S::kWidth) {
        const V v = S::load(xi + j), c = S::load(vp + j);
        // cum_take: x NaN, or x >= (<=) cur, which an ordered compare already makes
        // false when cur is NaN
        const V take = S::bor(S::unord(v), Max ? S::ge(v, c) : S::le(v, c));
        S::store(vi + j, S::select(take, v, c));
        S::each_pair(take, [&](__m128i m, int64_t l) {
          const int64_t at = j + l;
          const __m128i prev = _mm_loadu_si128(reinterpret_cast<const __m128i*>(ip + at));
          _mm_storeu_si128(reinterpret_cast<__m128i*>(ii + at),
                           _mm_or_si128(_mm_and_si128(m, g), _mm_andnot_si128(m, prev)));
        });
      }
    }
  }
#endif
  for (; j < j1; ++j) {
    const T v = xi[j * s_inner], cur = vp[j];
    const bool take = cum_take<T, Max>(v, cur);
    vi[j] = take ? v : cur;
    ii[j] = take ? gi : ip[j];
  }
}

// One scan of x viewed as (outer, n, inner) along n, in three modes chosen at compile time:
//   Carry: each lane's running (value, index) starts from (cv, ci)[o * inner + j] (a
//          value in T, a global int64 index) instead of the lane's first element; the
//          take rule is the same cum_take, so a chunked scan whose carries are the
//          running pairs of the earlier chunks equals the scan of the whole array bit
//          for bit.  Without a carry the first element is taken (cum_take(x, x) holds
//          for every x, NaN included).
//   Write: the running value and index of every element go to values / indices
//          (C-contiguous (outer, n, inner)); without Write nothing but the final pair is
//          stored: a read-only pass.
//   last_v / last_i (optional, (outer, inner)): the final running pair of each lane.
// Indices are i + offset (offset: the global position of element 0 along the axis).
template <typename T, bool Max, bool Carry, bool Write>
void cumext_scan(const T* x, int64_t outer, int64_t n, int64_t inner, int64_t s_outer,
                 int64_t s_n, int64_t s_inner, const T* cv, const int64_t* ci_in,
                 int64_t offset, T* values, int64_t* indices, T* last_v, int64_t* last_i,
                 int nthreads) {
  const int nt = threads_for(work_product(outer * inner, n), nthreads);
  if (inner == 1) {
    // Scan along rows, rows in parallel.  The branch is kept on purpose: the running
    // value changes rarely on typical data, so a predicted branch breaks the serial
    // compare-and-select chain that a cmov would create.  (Interleaving 8 rows to
    // overlap the chains was 5x slower: rows 16 KB apart alias in L1.)
    parallel_for(outer, chunk_for(outer, nt), nt, [&](int64_t o0, int64_t o1, int) {
      for (int64_t o = o0; o < o1; ++o) {
        const T* xr = x + o * s_outer;
        if (!Write && !Carry && s_n == 1) {  // the read-only summary: a reduction
          const int64_t j = cum_last_contiguous<T, Max>(xr, n);
          last_v[o] = xr[j];
          last_i[o] = j + offset;
          continue;
        }
        T* vr = Write ? values + o * n : nullptr;
        int64_t* ir = Write ? indices + o * n : nullptr;
        T cur = Carry ? cv[o] : xr[0];
        int64_t ci = Carry ? ci_in[o] : offset;
        auto step = [&](int64_t i) {
          T v = xr[i * s_n];
          if (__builtin_expect(cum_take<T, Max>(v, cur), 0)) {
            cur = v;
            ci = i + offset;
          }
          if (Write) {
            vr[i] = cur;
            ir[i] = ci;
          }
        };
        int64_t i = 0;
        if (s_n == 1) {
          // Contiguous rows: blocks where nothing is taken are skipped (read-only pass)
          // or filled with the running pair; the others take the element-wise steps.
          // Same decisions as the steps alone, so the same bits.
          for (; i + kCumBlock <= n; i += kCumBlock) {
            if (cum_any_take<T, Max>(xr + i, cur)) {
              for (int64_t b = i; b < i + kCumBlock; ++b) step(b);
            } else if (Write) {
              for (int64_t b = i; b < i + kCumBlock; ++b) {
                vr[b] = cur;
                ir[b] = ci;
              }
            }
          }
        }
        for (; i < n; ++i) step(i);
        if (last_v) {
          last_v[o] = cur;
          last_i[o] = ci;
        }
      }
    });
    return;
  }
  // Scan many columns at once: the previous output row (Write) or the lanes' running
  // pairs in last_v / last_i (read-only pass; then last_v must be given) are the running
  // state, so the inner loop over a block of columns is a vectorizable compare-and-select.
  // The outer * inner columns are cut into one contiguous range per thread, scanned in
  // blocks of at most kCumColumns: the longer a block's piece of each row, the fewer
  // streams restart their prefetch at every row.  cummax 4096x4096 float32 axis=0
  // (fastops/_bench/selection.py), 2 threads: tasks of 512 columns 14.4-18.7 ms, 1024
  // 1.15x the time of 2048 (half the row each).  The cap keeps a block's two rows of
  // running pairs in L2: 8192 against 2048 columns 0.90-0.95 (1x256x65536,
  // 16x256x4096, 1x1024x16384), 32768 no better.
  const int64_t columns = outer * inner;
  const int64_t part = (columns + nt - 1) / nt;
  parallel_for(columns, (part + 15) / 16 * 16, nt, [&](int64_t c0, int64_t c1, int) {
    for (int64_t c = c0; c < c1;) {
      const int64_t o = c / inner, j0 = c % inner;
      const int64_t j1 = std::min({inner, j0 + kCumColumns, j0 + (c1 - c)});
      c += j1 - j0;
      const T* xo = x + o * s_outer;
      // running state of row i - 1 (sp, sq) and where row i goes (dp, dq)
      T* vo = Write ? values + o * n * inner : last_v + o * inner;
      int64_t* io = Write ? indices + o * n * inner : last_i + o * inner;
      const T* co = Carry ? cv + o * inner : nullptr;
      const int64_t* cio = Carry ? ci_in + o * inner : nullptr;
      for (int64_t j = j0; j < j1; ++j) {
        T v = xo[j * s_inner];
        if (Carry) {
          bool take = cum_take<T, Max>(v, co[j]);
          vo[j] = take ? v : co[j];
          io[j] = take ? offset : cio[j];
        } else {
          vo[j] = v;
          io[j] = offset;
        }
      }
      for (int64_t i = 1; i < n; ++i) {
        const T* xi = xo + i * s_n;
        const int64_t gi = i + offset;
        if constexpr (Write)
          cum_row_step<T, Max>(xi, s_inner, vo + (i - 1) * inner, io + (i - 1) * inner,
                               vo + i * inner, io + i * inner, gi, j0, j1);
        else  // the state is updated in place
          cum_row_step<T, Max>(xi, s_inner, vo, io, vo, io, gi, j0, j1);
      }
      if (Write && last_v) {
        const T* vl = vo + (n - 1) * inner;
        const int64_t* il = io + (n - 1) * inner;
        for (int64_t j = j0; j < j1; ++j) {
          last_v[o * inner + j] = vl[j];
          last_i[o * inner + j] = il[j];
        }
      }
    }
  });
}

template <typename T, bool Max>
void cumext_impl(const T* x, int64_t outer, int64_t n, int64_t inner, int64_t s_outer,
                 int64_t s_n, int64_t s_inner, T* values, int64_t* indices, int nthreads) {
  cumext_scan<T, Max, false, true>(x, outer, n, inner, s_outer, s_n, s_inner, nullptr,
                                   nullptr, 0, values, indices, nullptr, nullptr, nthreads);
}

template <typename T>
void cumext(const T* x, int64_t outer, int64_t n, int64_t inner, int64_t s_outer, int64_t s_n,
            int64_t s_inner, bool is_max, T* values, int64_t* indices, int nthreads) {
  if (is_max)
    cumext_impl<T, true>(x, outer, n, inner, s_outer, s_n, s_inner, values, indices, nthreads);
  else
    cumext_impl<T, false>(x, outer, n, inner, s_outer, s_n, s_inner, values, indices, nthreads);
}

// The chunked forms (fastops.dask): cumext_from scans with a carry-in (cv, ci: (outer,
// inner), or null for none) and writes values / indices + offset; cumext_last is the
// read-only pass that stores only each lane's final running pair (global index).
template <typename T, bool Max>
void cumext_from_impl(const T* x, int64_t outer, int64_t n, int64_t inner, int64_t s_outer,
                      int64_t s_n, int64_t s_inner, const T* cv, const int64_t* ci,
                      int64_t offset, T* values, int64_t* indices, int nthreads) {
  if (cv)
    cumext_scan<T, Max, true, true>(x, outer, n, inner, s_outer, s_n, s_inner, cv, ci, offset,
                                    values, indices, nullptr, nullptr, nthreads);
  else
    cumext_scan<T, Max, false, true>(x, outer, n, inner, s_outer, s_n, s_inner, nullptr,
                                     nullptr, offset, values, indices, nullptr, nullptr,
                                     nthreads);
}

template <typename T>
void cumext_from(const T* x, int64_t outer, int64_t n, int64_t inner, int64_t s_outer,
                 int64_t s_n, int64_t s_inner, bool is_max, const T* cv, const int64_t* ci,
                 int64_t offset, T* values, int64_t* indices, int nthreads) {
  if (is_max)
    cumext_from_impl<T, true>(x, outer, n, inner, s_outer, s_n, s_inner, cv, ci, offset,
                              values, indices, nthreads);
  else
    cumext_from_impl<T, false>(x, outer, n, inner, s_outer, s_n, s_inner, cv, ci, offset,
                               values, indices, nthreads);
}

template <typename T>
void cumext_last(const T* x, int64_t outer, int64_t n, int64_t inner, int64_t s_outer,
                 int64_t s_n, int64_t s_inner, bool is_max, int64_t offset, T* last_v,
                 int64_t* last_i, int nthreads) {
  if (is_max)
    cumext_scan<T, true, false, false>(x, outer, n, inner, s_outer, s_n, s_inner, nullptr,
                                       nullptr, offset, nullptr, nullptr, last_v, last_i,
                                       nthreads);
  else
    cumext_scan<T, false, false, false>(x, outer, n, inner, s_outer, s_n, s_inner, nullptr,
                                        nullptr, offset, nullptr, nullptr, last_v, last_i,
                                        nthreads);
}

// ---------------------------------------------------------------------------- NonZero
// `x` is C-contiguous, read as unsigned words; an element is nonzero when
// (word & mask) != 0 (mask drops the sign bit of floats so -0.0 counts as zero).
// Pass 1 reads x once: per chunk a count, and a bitmask of the nonzeros (bit i of
// bits[w] is element 64w + i).  A prefix sum gives each chunk its output range, and
// pass 2 fills it from the bitmask alone.  x is read once (the fill used to read it
// again: nonzero 4096x4096 float32 10% moved 64 MB more), the bitmask is size/8 bytes
// and mostly still cached, and the fill emits exactly what was counted even when
// another Python thread rewrites x while the GIL is released.  Each chunk writes only
// inside its own range, so threads never race and the result does not depend on the
// thread count.

// Bit i set when word p[i] & mask is nonzero, for 64 consecutive words.  SSE2 (part of
// every x86-64); a portable loop elsewhere.
template <typename U>
inline uint64_t nonzero_bits64(const U* p, U mask) {
#if defined(__SSE2__)
  const __m128i m = sizeof(U) == 1   ? _mm_set1_epi8(static_cast<char>(mask))
                    : sizeof(U) == 2 ? _mm_set1_epi16(static_cast<short>(mask))
                    : sizeof(U) == 4 ? _mm_set1_epi32(static_cast<int>(mask))
                                     : _mm_set1_epi64x(static_cast<long long>(mask));
  const __m128i zero = _mm_setzero_si128();
  uint64_t zeros = 0;
  constexpr int per = 16 / sizeof(U);  // words per 16-byte load
  for (int j = 0; j < 64 / per; ++j) {
    __m128i v = _mm_and_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + j * per)), m);
    uint64_t z;
    if constexpr (sizeof(U) == 1) {
      z = static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, zero)));
    } else if constexpr (sizeof(U) == 2) {
      __m128i eq = _mm_cmpeq_epi16(v, zero);
      z = static_cast<uint32_t>(_mm_movemask_epi8(_mm_packs_epi16(eq, eq))) & 0xFFu;
    } else if constexpr (sizeof(U) == 4) {
      z = static_cast<uint32_t>(_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(v, zero))));
    } else {  // SSE2 has no 64-bit compare: both 32-bit halves equal to zero
      __m128i eq = _mm_cmpeq_epi32(v, zero);
      eq = _mm_and_si128(eq, _mm_shuffle_epi32(eq, 0xB1));
      z = static_cast<uint32_t>(_mm_movemask_pd(_mm_castsi128_pd(eq)));
    }
    zeros |= z << (j * per);
  }
  return ~zeros;
#else
  uint64_t bits = 0;
  for (int i = 0; i < 64; ++i) bits |= uint64_t((p[i] & mask) != 0) << i;
  return bits;
#endif
}

// Set bits of w.  __builtin_popcountll is a call into libgcc on the baseline x86-64
// build (POPCNT is not part of SSE2), which took a quarter of nonzero's time (4096x4096
// bool at 10%, one thread); the bit-parallel sum below is inline and branch-free.
// Builtin = true inside code compiled for POPCNT (nonzero_fill_chunk_popcnt).
#if defined(__POPCNT__) || !defined(__x86_64__)
constexpr bool kBuiltinPopcount = true;
#else
constexpr bool kBuiltinPopcount = false;
#endif
template <bool Builtin = kBuiltinPopcount>
inline int64_t popcount64(uint64_t w) {
  if constexpr (Builtin) {
    return __builtin_popcountll(w);
  } else {
    w -= (w >> 1) & 0x5555555555555555ull;
    w = (w & 0x3333333333333333ull) + ((w >> 2) & 0x3333333333333333ull);
    w = (w + (w >> 4)) & 0x0F0F0F0F0F0F0F0Full;
    return static_cast<int64_t>((w * 0x0101010101010101ull) >> 56);
  }
}

// Elements per chunk: a multiple of 64, so that no bitmask word straddles two chunks.
inline int64_t nonzero_chunk_len(int64_t size, int nchunks) {
  return ((size + nchunks - 1) / nchunks + 63) / 64 * 64;
}

// Pass 1.  bits holds (size + 63) / 64 words; counts[c] becomes chunk c's first output
// position.  Returns the total count.
template <typename U>
int64_t nonzero_count(const U* x, int64_t size, U mask, int nchunks, int64_t* counts,
                      uint64_t* bits, int nthreads) {
  const int64_t len = nonzero_chunk_len(size, nchunks);
  parallel_for(nchunks, 1, threads_for(size, nthreads), [&](int64_t c0, int64_t c1, int) {
    for (int64_t c = c0; c < c1; ++c) {
      const int64_t b = std::min(size, c * len), e = std::min(size, b + len);
      int64_t cnt = 0, i = b;
      // 64 words a bitmask (the count pass of 4096x4096 bool at 10%, 2 threads, C++
      // harness: 1.7 ms as a widening byte loop, 0.66 ms so).
      for (; i + 64 <= e; i += 64) {
        const uint64_t w = nonzero_bits64(x + i, mask);
        bits[i / 64] = w;
        cnt += popcount64<>(w);
      }
      if (i < e) {  // the last, partial word
        uint64_t w = 0;
        for (int64_t j = i; j < e; ++j) w |= uint64_t((x[j] & mask) != 0) << (j - i);
        bits[i / 64] = w;
        cnt += popcount64<>(w);
      }
      counts[c] = cnt;
    }
  });
  int64_t total = 0;
  for (int c = 0; c < nchunks; ++c) {
    int64_t t = counts[c];
    counts[c] = total;
    total += t;
  }
  return total;
}

// Pass 2: the (ndim, nnz) coordinates of pass 1's bitmask.
constexpr int kFlatten = 8;   // set bits written per group (nonzero_fill)

// Index of the lowest set bit of w; any value from 0 to 64 for w == 0 (a group's junk
// entries, see below).  TZCNT (BMI1, in x86-64-v3) is defined for 0; elsewhere the top
// bit keeps __builtin_ctzll defined, one more instruction a bit.
inline int64_t lowest_bit(uint64_t w) {
#if defined(__BMI__)
  return static_cast<int64_t>(_tzcnt_u64(w));
#else
  return __builtin_ctzll(w | (uint64_t(1) << 63));
#endif
}

// Chunk [b, e) of the bitmask into output positions [k, k_end).  Arguments by value:
// the output is int64_t, so a stored coordinate could alias a referenced int64_t and
// force reloads in the hot loop.  HwPopcount: inlined into a target("popcnt") function
// (or built for POPCNT), so popcount64's builtin is one instruction.  Two: ndim == 2,
// the row coordinate of a run is one value.
template <bool HwPopcount, bool Two>
__attribute__((always_inline)) inline void nonzero_fill_chunk_impl(
    const uint64_t* bits, int64_t b, int64_t e, int ndim, const int64_t* shape, int64_t nnz,
    int64_t* out, int64_t k, int64_t k_end) {
  const int64_t last = shape[ndim - 1];
  int64_t* last_coord = out + (ndim - 1) * nnz;
  int64_t coord[64] = {};          // NumPy allows at most 64 dimensions
  int64_t row_start = -1, row_end = -1;
  for (int64_t pos = b; pos < e;) {   // pos: a multiple of 64 (nonzero_chunk_len)
    if (pos >= row_start) {
      // The run of whole words inside the current row, while even a word of 64 set
      // bits stays inside this chunk's range [k, k_end) (the next chunk belongs to
      // another thread): the leading coordinates are the row's, the last one col0 +
      // bit.  The set bits go out kFlatten at a time without a test per bit (a group
      // may run past the word's last bit: the emptied word's junk entries are
      // overwritten by the next word), so the loop's exit mispredicts once per group,
      // not once per word's unknown count.  The run's bounds are tested once per word
      // and k stays in a register: 4096x4096 bool at 10%, one thread, C++ harness,
      // 1.6 -> 1.15 ns a nonzero; 2 % 7.1 -> 4.1, 50 % 1.04 -> 0.99.  Not kept before
      // this: one row check per nonzero (7.4 ms on one thread), a byte-LUT variant
      // storing 8 entries per mask byte (10.9 ms), streaming stores per element
      // (10.0 ms) or per 4 KiB staged in L1 (3.1 -> 4.2 ms on two threads); a group
      // for empty words too (no test) was 2.8x slower at 0.1 %.
      const int64_t stop = std::min(e, row_end) - 64, k_stop = k_end - 64;
      const int64_t row = coord[0];
      for (; pos <= stop && k <= k_stop; pos += 64) {
        uint64_t w = bits[pos / 64];
        if (!w) continue;
        const int64_t col0 = pos - row_start, n = popcount64<HwPopcount>(w);
        int64_t* col = last_coord + k;
        int64_t g = 0;
        do {
          if constexpr (Two) {
            std::fill_n(out + k + g, kFlatten, row);
          } else {
            for (int d = 0; d < ndim - 1; ++d)
              std::fill_n(out + d * nnz + k + g, kFlatten, coord[d]);
          }
          for (int u = 0; u < kFlatten; ++u) {
            col[g + u] = col0 + lowest_bit(w);
            w &= w - 1;
          }
          g += kFlatten;
        } while (g < n);
        k += n;
      }
      if (pos >= e) break;
    }
    // One word bit by bit: it enters a new row, straddles rows, or ends the range.
    uint64_t w = bits[pos / 64];
    while (w) {
      const int64_t p = pos + __builtin_ctzll(w);
      w &= w - 1;
      if (p >= row_end) {          // entered a new row: its leading coordinates
        int64_t r = p / last;
        row_start = r * last;
        row_end = row_start + last;
        for (int d = ndim - 2; d >= 0; --d) {
          coord[d] = r % shape[d];
          r /= shape[d];
        }
      }
      for (int d = 0; d < ndim - 1; ++d) out[d * nnz + k] = coord[d];
      last_coord[k++] = p - row_start;
    }
    pos += 64;
  }
}

template <bool HwPopcount>
__attribute__((always_inline)) inline void nonzero_fill_chunk_any(
    const uint64_t* bits, int64_t b, int64_t e, int ndim, const int64_t* shape, int64_t nnz,
    int64_t* out, int64_t k, int64_t k_end) {
  if (ndim == 2)
    nonzero_fill_chunk_impl<HwPopcount, true>(bits, b, e, ndim, shape, nnz, out, k, k_end);
  else
    nonzero_fill_chunk_impl<HwPopcount, false>(bits, b, e, ndim, shape, nnz, out, k, k_end);
}

// The chunk fill with the POPCNT instruction where the CPU has it (every x86-64 CPU
// since 2008; the baseline build may not assume it; the other instantiation differs only
// in calling popcount64, which the count pass runs on every call): a C++ harness around
// this function (1024x1024 bool at 10%, one thread, in cache) 1.76 -> 1.51 ns per
// nonzero; nonzero 4096x4096 bool 10%, 2 threads, after a pause 2.75-2.8 -> 2.55-2.63 ms.
#if defined(__x86_64__) && !defined(__POPCNT__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("popcnt"))) inline void nonzero_fill_chunk_popcnt(
    const uint64_t* bits, int64_t b, int64_t e, int ndim, const int64_t* shape, int64_t nnz,
    int64_t* out, int64_t k, int64_t k_end) {
  nonzero_fill_chunk_any<true>(bits, b, e, ndim, shape, nnz, out, k, k_end);
}
#define FASTOPS_POPCNT_CLONE 1
#endif

inline void nonzero_fill_chunk(const uint64_t* bits, int64_t b, int64_t e, int ndim,
                               const int64_t* shape, int64_t nnz, int64_t* out, int64_t k,
                               int64_t k_end) {
#if defined(FASTOPS_POPCNT_CLONE)
  static const bool popcnt = __builtin_cpu_supports("popcnt");
  if (popcnt) return nonzero_fill_chunk_popcnt(bits, b, e, ndim, shape, nnz, out, k, k_end);
  nonzero_fill_chunk_any<false>(bits, b, e, ndim, shape, nnz, out, k, k_end);
#else
  nonzero_fill_chunk_any<kBuiltinPopcount>(bits, b, e, ndim, shape, nnz, out, k, k_end);
#endif
}

inline void nonzero_fill(const uint64_t* bits, int64_t size, int ndim, const int64_t* shape,
                         int nchunks, const int64_t* offsets, int64_t nnz, int64_t* out,
                         int nthreads) {
  const int64_t len = nonzero_chunk_len(size, nchunks);
  parallel_for(nchunks, 1, threads_for(size, nthreads), [&](int64_t c0, int64_t c1, int) {
    for (int64_t c = c0; c < c1; ++c)
      nonzero_fill_chunk(bits, std::min(size, c * len), std::min(size, (c + 1) * len), ndim,
                         shape, nnz, out, offsets[c], c + 1 < nchunks ? offsets[c + 1] : nnz);
  });
}

// ------------------------------------------------------- compiled fast-path entries
// For the fast_* functions of selection.pyx (fastops/_cpu/_fast.pxd): a C-contiguous
// input of NumPy type number `typenum`, on one thread (the fast paths take only inputs
// the kernels would run serially anyway); false, with nothing done, for a dtype
// visit_real leaves to the general path.
inline bool cumext_contiguous(int typenum, const void* x, int64_t outer, int64_t n,
                              int64_t inner, bool is_max, void* values, int64_t* indices) {
  return visit_real(typenum, [&](auto t) {
    using T = decltype(t);
    cumext(static_cast<const T*>(x), outer, n, inner, n * inner, inner, 1, is_max,
           static_cast<T*>(values), indices, 1);
  });
}

inline bool topk_contiguous(int typenum, const void* x, int64_t outer, int64_t n,
                            int64_t inner, int64_t k, bool largest, bool sorted, void* values,
                            int64_t* indices) {
  return visit_real(typenum, [&](auto t) {
    using T = decltype(t);
    topk(static_cast<const T*>(x), outer, n, inner, n * inner, inner, 1, k, largest, sorted,
         static_cast<T*>(values), indices, 1);
  });
}

// NonZero of `size` (<= kParallelGrain) elements of `itemsize` bytes (1, 2, 4 or 8): the
// count, which leaves the bitmask in `bits` (kNonzeroFastWords words, on the caller's
// stack), then the fill of (ndim, nnz) coordinates from it.  A float's word mask drops
// the sign bit, as fastops.selection.nonzero's does for the general path.
constexpr int64_t kNonzeroFastWords = kParallelGrain / 64;

template <typename U>
inline U nonzero_mask(bool is_float) {
  return is_float ? static_cast<U>(static_cast<U>(~U(0)) >> 1) : static_cast<U>(~U(0));
}

inline int64_t nonzero_count_contiguous(int itemsize, bool is_float, const void* x,
                                        int64_t size, uint64_t* bits) {
  if (size > kNonzeroFastWords * 64) throw std::invalid_argument("nonzero: over the fast path's size");
  int64_t nnz = 0, first = 0;
  visit_word(itemsize, [&](auto w) {
    using U = decltype(w);
    nnz = nonzero_count(static_cast<const U*>(x), size, nonzero_mask<U>(is_float), 1, &first,
                        bits, 1);
  });
  return nnz;
}

inline void nonzero_fill_contiguous(const uint64_t* bits, int64_t size, int ndim,
                                    const int64_t* shape, int64_t nnz, int64_t* out) {
  const int64_t first = 0;
  nonzero_fill(bits, size, ndim, shape, 1, &first, nnz, out, 1);
}

}  // namespace fastops
