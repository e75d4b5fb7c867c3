// A caching allocator for NumPy array data (NEP 49 PyDataMem_Handler), installed by
// fastops.onnx.Session.run for the duration of a run (NumPy keeps the handler in a
// context variable, so other threads and code outside the run are not affected).
//
// Why: a run allocates its intermediate arrays afresh, and a fresh multi-megabyte block
// is a fresh mmap whose pages fault and are zeroed on first write: 2200-2800 faults and
// 10-15 ms of system time per run of the frcnn detector (75 ms a run; 64 ms with glibc
// told never to return memory).  ONNX Runtime reuses its arena.  Here a freed block of
// at least kArenaMinBytes goes to a small cache instead of to the OS, and a later
// allocation of half its size up to its size takes it back, pages already mapped: the
// most recently freed such block, whose lines are the likeliest to be in cache.  (Exact
// sizes only, the blocks handed out were mostly the previous run's, long evicted: a
// frcnn run's medians of nine alternating processes 37.0 -> 36.5 ms with this rule.)
//
// Every block carries a kArenaHeader-byte header (its capacity and class), so that free
// and realloc know what they hold (realloc gets no size from NumPy).
// Small blocks are plain malloc; cached ones are 64-byte aligned.  At most `cap` bytes
// stay idle (fastops' FASTOPS_POOL_BYTES, shared in spirit with the op-output pool);
// the oldest go back to the OS first.  Thread-safe (a mutex around the cache).
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

namespace fastops {

constexpr size_t kArenaHeader = 64;                 // keeps cached blocks 64-byte aligned
constexpr size_t kArenaMinBytes = size_t(256) << 10;  // smaller: malloc's own free lists
constexpr size_t kArenaGrain = size_t(64) << 10;    // capacities round up to this

struct ArenaHeader {
  size_t capacity;  // usable bytes after the header
  bool cached;      // a kArenaMinBytes+ block (aligned_alloc, cacheable)
};

class Arena {
 public:
  explicit Arena(size_t cap) : cap_(cap) {}

  void* allocate(size_t size, bool zero) {
    if (size > SIZE_MAX - kArenaHeader - kArenaGrain) return nullptr;
    if (size < kArenaMinBytes) {
      void* raw = zero ? std::calloc(1, size + kArenaHeader) : std::malloc(size + kArenaHeader);
      return raw ? finish(raw, size, false) : nullptr;
    }
    size_t capacity = (size + kArenaGrain - 1) / kArenaGrain * kArenaGrain;
    void* raw = take(capacity);
    if (raw == nullptr) {
      raw = std::aligned_alloc(64, capacity + kArenaHeader);
      if (raw == nullptr) {  // release what is idle and try once more
        trim(0);
        raw = std::aligned_alloc(64, capacity + kArenaHeader);
        if (raw == nullptr) return nullptr;
      }
    }
    void* p = finish(raw, capacity, true);
    if (zero) std::memset(p, 0, size);
    return p;
  }

  void release(void* p) {
    if (p == nullptr) return;
    void* raw = static_cast<char*>(p) - kArenaHeader;
    const ArenaHeader h = *static_cast<ArenaHeader*>(raw);
    if (!h.cached || h.capacity > cap_) {
      std::free(raw);
      return;
    }
    std::lock_guard<std::mutex> lock(m_);
    idle_.push_back({h.capacity, raw});
    idle_bytes_ += h.capacity;
    while (idle_bytes_ > cap_) {  // oldest first
      idle_bytes_ -= idle_.front().capacity;
      std::free(idle_.front().raw);
      idle_.erase(idle_.begin());
    }
  }

  void* reallocate(void* p, size_t size) {
    if (p == nullptr) return allocate(size, false);
    const ArenaHeader h = *reinterpret_cast<ArenaHeader*>(static_cast<char*>(p) - kArenaHeader);
    if (size <= h.capacity && (h.cached || size < kArenaMinBytes)) return p;
    void* q = allocate(size, false);
    if (q == nullptr) return nullptr;  // p stays valid, as realloc's contract says
    std::memcpy(q, p, h.capacity < size ? h.capacity : size);
    release(p);
    return q;
  }

  // Frees idle blocks until at most `keep` bytes are idle.
  void trim(size_t keep) {
    std::lock_guard<std::mutex> lock(m_);
    while (idle_bytes_ > keep && !idle_.empty()) {
      idle_bytes_ -= idle_.front().capacity;
      std::free(idle_.front().raw);
      idle_.erase(idle_.begin());
    }
  }

  size_t idle_bytes() {
    std::lock_guard<std::mutex> lock(m_);
    return idle_bytes_;
  }

 private:
  struct Idle {
    size_t capacity;
    void* raw;
  };

  static void* finish(void* raw, size_t capacity, bool cached) {
    ArenaHeader* h = static_cast<ArenaHeader*>(raw);
    h->capacity = capacity;
    h->cached = cached;
    return static_cast<char*>(raw) + kArenaHeader;
  }

  // The most recently freed idle block of `capacity` to 2 x `capacity` bytes (its lines
  // are the likeliest to be in cache), or null.
  // `capacity` becomes the block's own.
  void* take(size_t& capacity) {
    std::lock_guard<std::mutex> lock(m_);
    for (size_t i = idle_.size(); i-- > 0;) {
      if (idle_[i].capacity >= capacity && idle_[i].capacity / 2 <= capacity) {
        void* raw = idle_[i].raw;
        capacity = idle_[i].capacity;
        idle_bytes_ -= capacity;
        idle_.erase(idle_.begin() + static_cast<std::ptrdiff_t>(i));
        return raw;
      }
    }
    return nullptr;
  }

  const size_t cap_;
  std::mutex m_;
  std::vector<Idle> idle_;
  size_t idle_bytes_ = 0;
};

}  // namespace fastops
