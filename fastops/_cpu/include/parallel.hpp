// parallel_for: the CPU kernels' thread pool, in which the calling thread works too and
// never waits for a worker that has not started.
//
// Why not an OpenMP parallel region: its end is a barrier that waits for every team
// member, including one the OS has not scheduled yet.  On a 2-core machine where another
// runtime's idle threads still spin (torch's libgomp spins for milliseconds after each
// call), the woken worker waits for a scheduler slice and a 0.5 ms call takes 4-8 ms
// (docs/performance.md, "cold calls").  Here the caller and the workers take chunks from
// one atomic counter and the call returns when every chunk is done: a worker that wakes
// late finds nothing left, so a call is never slower than on one thread by more than
// the chunk a descheduled worker holds.
//
// A worker that finishes a job polls for the next one for kSpin (1 ms, yielding the core
// to any other runnable thread as it polls) before it sleeps: back-to-back calls get
// their workers at once, and the user's next step (cv2, ONNX Runtime, the model) gets the
// cores after at most 1 ms of yielding polls (libgomp spins for several ms).
//
// A sleeping worker is woken off the caller's CPU.  On the CI's 2-vCPU Firecracker VM,
// after a pause of ~20 ms the kernel often queues the woken worker on the caller's own
// busy CPU (the idle vCPU counts as preempted, so select_idle_sibling skips it); the
// worker then waits a whole slice, 2.6-4.3 ms, and the call runs serially.  Removing the
// caller's CPU from a sleeping worker's affinity before the wake took the worker's start
// from a bimodal 30 us / 2.8 ms to 40-180 us (docs/performance.md, "Why the worker woke
// late").  The awake worker takes the caller's whole mask back at once: left pinned, a
// long call shared one CPU with a caller that had moved there (roi_align 1000 RoIs 585
// ms instead of 182).  Masks derive from the caller's own affinity (taskset and cgroup
// limits are kept); the syscalls happen on the cold path only, next to a 50-100 us wake.
//
// A small loop (work < kWakeWork, common.hpp) that finds every worker asleep and nothing
// run within kSpin (the first call after a pause: Pool::cold) runs on the caller alone:
// the wake's syscalls and the worker's late start cost more than such a loop.  Every
// parallel_for stamps its end, so the next call of a loop finds the workers woken.
//
// One pool per process (GCC makes the function-local static a unique symbol across the
// extension modules); a caller that finds it busy (another Python thread's kernel, say
// dask's threads) runs its loop alone: the cores are taken already.  After fork() the
// child builds a new pool (the parent's workers do not exist there).
//
// Results never depend on which thread ran which chunk: kernels write disjoint outputs
// per item and add per-chunk partials in chunk order.
#pragma once
#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <thread>
#include <type_traits>
#include <vector>

#include "common.hpp"
#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace fastops {
namespace detail {

struct Job {
  void (*call)(void* body, int64_t begin, int64_t end, int slot);
  void* body;
  int64_t n, grain, nchunks;
  int nt;
  std::atomic<int64_t> next{0};  // next chunk to take
  std::atomic<int64_t> done{0};  // chunks finished (release: their writes are published)
  std::atomic<int> slots{1};     // slot 0 is the caller's
  std::atomic<bool> failed{false};
  std::exception_ptr error;      // written once, by the thread that set `failed`

  // Take and run chunks until none is left.  After a failure the remaining chunks are
  // counted but skipped; the first exception is kept for the caller.
  void work(int slot) noexcept {
    for (;;) {
      const int64_t c = next.fetch_add(1, std::memory_order_relaxed);
      if (c >= nchunks) return;
      if (!failed.load(std::memory_order_relaxed)) {
        const int64_t b = c * grain;
        try {
          call(body, b, std::min(n, b + grain), slot);
        } catch (...) {
          bool expected = false;
          if (failed.compare_exchange_strong(expected, true)) error = std::current_exception();
        }
      }
      done.fetch_add(1, std::memory_order_release);
    }
  }
};

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

inline int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch()).count();
}

// steady_clock ns of the last parallel_for's end or Pool::cold() request (one per process,
// like the pool: a function-local static is a unique symbol across the modules)
inline std::atomic<int64_t>& last_activity() {
  static std::atomic<int64_t> t{0};
  return t;
}

class Pool {
 public:
  static constexpr std::chrono::microseconds kSpin{1000};

  static Pool& instance() {
    static std::mutex m;
    static Pool* pool = nullptr;
    std::lock_guard<std::mutex> lock(m);
    if (pool == nullptr || pool->pid_ != getpid()) pool = new Pool();  // never freed: workers
    return *pool;                                                      // outlive every caller
  }

  // True when every worker sleeps and nothing ran for more than kSpin: the first call
  // after a pause (common.hpp, kWakeWork).  A request within kSpin of the last loop's end
  // is a loop of calls, whose workers are then woken and stay awake as before.
  bool cold() {
    const int64_t now = now_ns();
    const int64_t prev = last_activity().exchange(now, std::memory_order_relaxed);
    return awake_.load(std::memory_order_relaxed) == 0 &&
           now - prev > std::chrono::duration_cast<std::chrono::nanoseconds>(kSpin).count();
  }

  // Runs `job` on the caller and up to job->nt - 1 workers; returns when it is done.
  void run(const std::shared_ptr<Job>& job) {
    if (busy_.exchange(true, std::memory_order_acquire)) {
      job->work(0);  // another thread's job holds the pool: run this one alone
      return;
    }
    bool wake;
    {
      std::lock_guard<std::mutex> lock(m_);
      while (static_cast<int>(workers_.size()) < job->nt - 1) {
        try {
          const size_t me = workers_.size();
          workers_.emplace_back();
          awake_.fetch_add(1, std::memory_order_relaxed);  // (a new worker starts awake)
          std::thread t([this, me] { loop(me); });
          workers_[me].handle = t.native_handle();
          pthread_setname_np(t.native_handle(), "fastops-pool");  // for top, py-spy, tests
          t.detach();
        } catch (...) {  // no more threads to be had: run with those there are
          if (workers_.back().handle == pthread_t()) {
            workers_.pop_back();
            awake_.fetch_sub(1, std::memory_order_relaxed);
          }
          break;
        }
      }
      job_ = job;
      generation_.fetch_add(1, std::memory_order_release);
      wake = sleepers_ > 0;
      if (wake) wake_off_caller_cpu();
    }
    if (wake) cv_.notify_all();
    job->work(0);
    // the chunks still running belong to workers that are running: a short wait
    for (int spins = 0; job->done.load(std::memory_order_acquire) < job->nchunks; ++spins)
      if (spins > 64) std::this_thread::yield();
    {
      std::lock_guard<std::mutex> lock(m_);
      job_.reset();
    }
    busy_.store(false, std::memory_order_release);
  }

 private:
  Pool() : pid_(getpid()) {}

  // (under m_) The sleeping workers are about to be woken: until each has woken, it may
  // run on any CPU the caller may except the caller's; then it takes the caller's whole
  // mask back (loop), so a long call never keeps a worker off a CPU the caller left.
  void wake_off_caller_cpu() {
    const int cpu = sched_getcpu();
    if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof caller_mask_, &caller_mask_) != 0)
      return;
    cpu_set_t off = caller_mask_;
    CPU_CLR(cpu, &off);
    if (CPU_COUNT(&off) == 0) return;
    for (Worker& w : workers_)
      if (w.asleep && pthread_setaffinity_np(w.handle, sizeof off, &off) == 0) w.restricted = true;
  }

  void loop(size_t me) {
    uint64_t seen = 0;
    for (;;) {
      // poll for kSpin, then sleep until the generation changes
      const auto until = std::chrono::steady_clock::now() + kSpin;
      for (unsigned i = 1; generation_.load(std::memory_order_acquire) == seen; ++i) {
        cpu_relax();
        if (i % 64 == 0) {
          std::this_thread::yield();
          if (std::chrono::steady_clock::now() > until) break;
        }
      }
      std::shared_ptr<Job> job;
      {
        std::unique_lock<std::mutex> lock(m_);
        ++sleepers_;
        workers_[me].asleep = true;
        awake_.fetch_sub(1, std::memory_order_relaxed);
        cv_.wait(lock, [&] { return generation_.load(std::memory_order_relaxed) != seen; });
        awake_.fetch_add(1, std::memory_order_relaxed);
        workers_[me].asleep = false;
        --sleepers_;
        seen = generation_.load(std::memory_order_relaxed);
        job = job_;
        if (workers_[me].restricted) {  // woken where the caller is not: take the rest back
          workers_[me].restricted = false;
          pthread_setaffinity_np(pthread_self(), sizeof caller_mask_, &caller_mask_);
        }
      }
      if (!job) continue;  // woke after the job was done
      const int slot = job->slots.fetch_add(1, std::memory_order_relaxed);
      if (slot < job->nt) job->work(slot);
    }
  }

  const pid_t pid_;
  std::mutex m_;
  std::condition_variable cv_;
  std::shared_ptr<Job> job_;                 // guarded by m_
  std::atomic<uint64_t> generation_{0};      // written under m_; polled without it
  int sleepers_ = 0;                         // workers in cv_.wait (guarded by m_)
  std::atomic<int> awake_{0};                // workers not in cv_.wait (for cold())
  struct Worker {
    pthread_t handle{};                      // detached; workers never exit
    bool asleep = false;                     // in cv_.wait
    bool restricted = false;                 // kept off the waking caller's CPU
  };
  std::vector<Worker> workers_;              // guarded by m_
  cpu_set_t caller_mask_{};                  // the last waking caller's affinity (under m_)
  std::atomic<bool> busy_{false};
};

}  // namespace detail

inline bool pool_cold() { return detail::Pool::instance().cold(); }

// True when no parallel_for (serial ones included) ended and no pool_cold() was asked
// within the pool's spin time: a call after a pause, whose data the idle time has likely
// evicted.  Unlike pool_cold() it restarts nothing.
inline bool after_pause() {
  return detail::now_ns() - detail::last_activity().load(std::memory_order_relaxed) >
         std::chrono::duration_cast<std::chrono::nanoseconds>(detail::Pool::kSpin).count();
}

// Calls body(begin, end, slot) for chunks [begin, end) of [0, n), `grain` items each, on
// up to `nt` threads (the caller included); `slot` in [0, nt) is unique among the threads
// of one call (an index into per-thread scratch).  The first exception a chunk throws is
// rethrown here after every other chunk has finished or been skipped.  body runs once
// per chunk, not per thread: per-thread setup at its top repeats for every chunk
// (tests/test_parallel.py rejects scratch fills there; ThreadScratch zeroes once).
template <class F>
void parallel_for(int64_t n, int64_t grain, int nt, F&& body) {
  if (n <= 0) return;
  grain = std::max<int64_t>(grain, 1);
  const int64_t nchunks = (n - 1) / grain + 1;
  if (nt > nchunks) nt = static_cast<int>(nchunks);
  if (nt <= 1) {
    body(int64_t(0), n, 0);
    detail::last_activity().store(detail::now_ns(), std::memory_order_relaxed);
    return;
  }
  using Body = std::remove_reference_t<F>;
  auto job = std::make_shared<detail::Job>();
  job->call = [](void* b, int64_t begin, int64_t end, int slot) {
    (*static_cast<Body*>(b))(begin, end, slot);
  };
  job->body = const_cast<void*>(static_cast<const void*>(&body));
  job->n = n;
  job->grain = grain;
  job->nchunks = nchunks;
  job->nt = nt;
  detail::Pool::instance().run(job);
  detail::last_activity().store(detail::now_ns(), std::memory_order_relaxed);
  if (job->failed.load(std::memory_order_acquire)) std::rethrow_exception(job->error);
}

// part(t) for t in [0, parts), one part per chunk: for algorithms that split their work
// into a fixed number of disjoint parts (owned rows, page-aligned copy ranges) rather than
// items.  Any thread may run any part.
template <class F>
void parallel_parts(int parts, F&& part) {
  parallel_for(parts, 1, parts, [&](int64_t t0, int64_t t1, int) {
    for (int64_t t = t0; t < t1; ++t) part(t);
  });
}

// Per-thread scratch: `per` values for each of `nt` slots, every slot's block starting on
// its own kScratchAlign-byte boundary, so that no two threads ever write one cache line
// (nor a pair the adjacent-line prefetcher couples).  Packed blocks shared lines: in
// roi_align each thread's 224-byte bin sums and 7-byte flags sat next to the other's,
// written in the innermost loop, and 2 threads ran as slow as 1 (4.8 vs 4.5 ms).
// tests/test_parallel.py rejects `data() + slot * n` style slot offsets in the kernels.
constexpr size_t kScratchAlign = 128;

template <typename T>
class ThreadScratch {
  static_assert(std::is_trivially_copyable<T>::value &&
                    std::is_trivially_destructible<T>::value,
                "raw aligned storage: plain values only");

 public:
  // zero: value-initialize every element (as std::vector would); else leave them as
  // `new T[]` does, for scratch that is written before it is read
  ThreadScratch(int64_t per, int nt, bool zero = true)
      : stride_(padded(per)),
        buf_(static_cast<T*>(::operator new[](
            static_cast<size_t>(size_mul(size_mul(stride_, std::max(nt, 1)), sizeof(T))),
            std::align_val_t(kScratchAlign)))) {
    if (zero) std::uninitialized_fill_n(buf_.get(), size_mul(stride_, std::max(nt, 1)), T());
  }
  T* operator()(int slot) const { return buf_.get() + static_cast<int64_t>(slot) * stride_; }

 private:
  struct Free {
    void operator()(T* p) const { ::operator delete[](p, std::align_val_t(kScratchAlign)); }
  };
  // per rounded up so that per * sizeof(T) is a multiple of kScratchAlign
  static int64_t padded(int64_t per) {
    int64_t step = 1;
    while ((step * static_cast<int64_t>(sizeof(T))) % static_cast<int64_t>(kScratchAlign) != 0)
      ++step;
    return std::max<int64_t>(step, (per + step - 1) / step * step);
  }
  int64_t stride_;
  std::unique_ptr<T[], Free> buf_;
};

// One object per thread (a vector whose size changes, a struct of counters), each on its
// own kScratchAlign bytes: std::vector<Padded<X>> instead of std::vector<X>.
template <typename X>
struct alignas(kScratchAlign) Padded {
  X v;
};

// Chunk size that gives each of nt threads about `per_thread` chunks: enough for the
// caller to take over a late worker's share, few enough that the shared counter is cheap.
inline int64_t chunk_for(int64_t n, int nt, int64_t per_thread = 8) {
  const int64_t parts = std::max<int64_t>(1, static_cast<int64_t>(nt) * per_thread);
  return std::max<int64_t>(1, (n + parts - 1) / parts);
}

}  // namespace fastops
