#include "bandwidth.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define FBNGRAD_BENCH_X86 1
#endif

namespace fbngrad_bench {
namespace {

// Kernels over [0, n) floats, n a multiple of 16, pointers 64-byte aligned. One per ISA,
// compiled for it with a target attribute and chosen at run time (no -m flag for the file:
// the rest of the binary stays runnable on any x86-64).
using Kernel = void (*)(const float *a, const float *b, float *d, size_t n);

#ifdef FBNGRAD_BENCH_X86
__attribute__((target("avx512f"))) void copy_avx512(const float *a, const float *, float *d, size_t n) {
    for (size_t i = 0; i < n; i += 16) _mm512_store_ps(d + i, _mm512_load_ps(a + i));
}
__attribute__((target("avx512f"))) void copy_nt_avx512(const float *a, const float *, float *d, size_t n) {
    for (size_t i = 0; i < n; i += 16) _mm512_stream_ps(d + i, _mm512_load_ps(a + i));
    _mm_sfence();
}
__attribute__((target("avx512f"))) void add_avx512(const float *a, const float *b, float *d, size_t n) {
    for (size_t i = 0; i < n; i += 16) _mm512_store_ps(d + i, _mm512_add_ps(_mm512_load_ps(a + i), _mm512_load_ps(b + i)));
}
__attribute__((target("avx512f"))) void add_nt_avx512(const float *a, const float *b, float *d, size_t n) {
    for (size_t i = 0; i < n; i += 16)
        _mm512_stream_ps(d + i, _mm512_add_ps(_mm512_load_ps(a + i), _mm512_load_ps(b + i)));
    _mm_sfence();
}
// The sums' pass: reads a and b, writes one float (*d), like the op's per-channel sums.
__attribute__((target("avx512f"))) void sum_avx512(const float *a, const float *b, float *d, size_t n) {
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    for (size_t i = 0; i < n; i += 16) {
        const __m512 y = _mm512_load_ps(b + i);
        s0 = _mm512_add_ps(s0, y);
        s1 = _mm512_fmadd_ps(y, _mm512_load_ps(a + i), s1);
    }
    alignas(64) float v[16];
    _mm512_store_ps(v, _mm512_add_ps(s0, s1));
    float sum = 0.0f;
    for (float x : v) sum += x;
    *d = sum;
}
__attribute__((target("avx"))) void copy_avx(const float *a, const float *, float *d, size_t n) {
    for (size_t i = 0; i < n; i += 8) _mm256_store_ps(d + i, _mm256_load_ps(a + i));
}
__attribute__((target("avx"))) void copy_nt_avx(const float *a, const float *, float *d, size_t n) {
    for (size_t i = 0; i < n; i += 8) _mm256_stream_ps(d + i, _mm256_load_ps(a + i));
    _mm_sfence();
}
__attribute__((target("avx"))) void add_avx(const float *a, const float *b, float *d, size_t n) {
    for (size_t i = 0; i < n; i += 8) _mm256_store_ps(d + i, _mm256_add_ps(_mm256_load_ps(a + i), _mm256_load_ps(b + i)));
}
__attribute__((target("avx"))) void add_nt_avx(const float *a, const float *b, float *d, size_t n) {
    for (size_t i = 0; i < n; i += 8) _mm256_stream_ps(d + i, _mm256_add_ps(_mm256_load_ps(a + i), _mm256_load_ps(b + i)));
    _mm_sfence();
}
void copy_sse2(const float *a, const float *, float *d, size_t n) {
    for (size_t i = 0; i < n; i += 4) _mm_store_ps(d + i, _mm_load_ps(a + i));
}
void copy_nt_sse2(const float *a, const float *, float *d, size_t n) {
    for (size_t i = 0; i < n; i += 4) _mm_stream_ps(d + i, _mm_load_ps(a + i));
    _mm_sfence();
}
void add_sse2(const float *a, const float *b, float *d, size_t n) {
    for (size_t i = 0; i < n; i += 4) _mm_store_ps(d + i, _mm_add_ps(_mm_load_ps(a + i), _mm_load_ps(b + i)));
}
void add_nt_sse2(const float *a, const float *b, float *d, size_t n) {
    for (size_t i = 0; i < n; i += 4) _mm_stream_ps(d + i, _mm_add_ps(_mm_load_ps(a + i), _mm_load_ps(b + i)));
    _mm_sfence();
}
// Also the AVX set's sums: a read-only pass is memory-bound at 16-byte loads too.
void sum_sse2(const float *a, const float *b, float *d, size_t n) {
    __m128 s0 = _mm_setzero_ps(), s1 = s0;
    for (size_t i = 0; i < n; i += 4) {
        const __m128 y = _mm_load_ps(b + i);
        s0 = _mm_add_ps(s0, y);
        s1 = _mm_add_ps(s1, _mm_mul_ps(y, _mm_load_ps(a + i)));
    }
    alignas(16) float v[4];
    _mm_store_ps(v, _mm_add_ps(s0, s1));
    *d = v[0] + v[1] + v[2] + v[3];
}
#else
// No portable non-temporal store: the _nt probes are the ordinary ones (said in the label).
void copy_plain(const float *a, const float *, float *d, size_t n) { std::memcpy(d, a, n * sizeof(float)); }
void add_plain(const float *a, const float *b, float *d, size_t n) {
    for (size_t i = 0; i < n; ++i) d[i] = a[i] + b[i];
}
void sum_plain(const float *a, const float *b, float *d, size_t n) {
    float s = 0.0f;
    for (size_t i = 0; i < n; ++i) s += b[i] + b[i] * a[i];
    *d = s;
}
#endif

struct Kernels {
    const char *isa;
    Kernel copy, copy_nt, add, add_nt, sum;
};

const Kernels &kernels() {
    static const Kernels k = [] {
#ifdef FBNGRAD_BENCH_X86
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f"))
            return Kernels{"avx512f", copy_avx512, copy_nt_avx512, add_avx512, add_nt_avx512, sum_avx512};
        if (__builtin_cpu_supports("avx")) return Kernels{"avx", copy_avx, copy_nt_avx, add_avx, add_nt_avx, sum_sse2};
        return Kernels{"sse2", copy_sse2, copy_nt_sse2, add_sse2, add_nt_sse2, sum_sse2};
#else
        return Kernels{"portable loop, no non-temporal stores", copy_plain, copy_plain, add_plain, add_plain,
                       sum_plain};
#endif
    }();
    return k;
}

struct FreeDeleter {
    void operator()(float *p) const { std::free(p); }
};
using Array = std::unique_ptr<float[], FreeDeleter>;

// Three arrays of `floats` each, allocated and first touched once for all the probes.
struct Arrays {
    size_t floats = 0;
    Array a, b, d;
};

Arrays &arrays(size_t floats) {
    static Arrays arr;
    if (arr.floats == floats) return arr;
    auto alloc = [floats] {
        void *p = std::aligned_alloc(64, floats * sizeof(float));
        if (!p) {
            std::fprintf(stderr, "fbngrad_bench: cannot allocate the bandwidth probe's arrays\n");
            std::abort();
        }
        return Array(static_cast<float *>(p));
    };
    arr.a.reset();
    arr.b.reset();
    arr.d.reset();
    arr.a = alloc();
    arr.b = alloc();
    arr.d = alloc();
    for (size_t i = 0; i < floats; ++i) {
        arr.a[i] = float(i & 1023);
        arr.b[i] = 1.0f;
        arr.d[i] = 0.0f;
    }
    arr.floats = floats;
    return arr;
}

// fn(t) on threads 0..threads-1, t = 0 on the calling thread.
template <class Fn>
void on_threads(int threads, const Fn &fn) {
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(fn, t);
    fn(0);
    for (auto &th : pool) th.join();
}

// k over [0, floats) in chunks of whole 64-byte lines, one per thread; a
// kernel that writes one float (sum) writes it to sink[t] instead.
void run_split(Kernel k, const Arrays &arr, int threads, float *sink = nullptr) {
    const size_t lines = arr.floats / 16, per = (lines + threads - 1) / threads;
    on_threads(threads, [&](int t) {
        const size_t b = std::min(lines, t * per) * 16, e = std::min(lines, (t + 1) * per) * 16;
        if (e > b) k(arr.a.get() + b, arr.b.get() + b, sink ? sink + t : arr.d.get() + b, e - b);
    });
}

// The op's access patterns, as plain loops: what the memory allows each of
// fbngrad's schedules (docs/benchmarks.md), with and without non-temporal stores.
//   two passes: the sums over all of a and b, then d = a + b (NHWC training)
//   one pass: blocks of kBlockFloats, each summed and then written from the
//   cache (the NCHW schedules, NHWC inference on large tensors); the threads
//   take the blocks in turn, as Halide's thread pool hands out tasks
constexpr size_t kBlockFloats = (size_t(1) << 20) / sizeof(float);  // 1 MiB of each array

void run_two_pass(Kernel write, const Arrays &arr, int threads) {
    std::vector<float> sink(static_cast<size_t>(threads));
    run_split(kernels().sum, arr, threads, sink.data());
    benchmark::DoNotOptimize(sink.data());
    run_split(write, arr, threads);
}

void run_one_pass(Kernel write, const Arrays &arr, int threads) {
    const size_t blocks = (arr.floats + kBlockFloats - 1) / kBlockFloats;
    std::atomic<size_t> next{0};
    std::vector<float> sink(static_cast<size_t>(threads));
    on_threads(threads, [&](int t) {
        for (size_t i; (i = next.fetch_add(1)) < blocks;) {
            const size_t b = i * kBlockFloats, n = std::min(arr.floats - b, kBlockFloats);
            kernels().sum(arr.a.get() + b, arr.b.get() + b, &sink[size_t(t)], n);
            write(arr.a.get() + b, arr.b.get() + b, arr.d.get() + b, n);
        }
    });
    benchmark::DoNotOptimize(sink.data());
}

enum class Pattern { Stream, OnePass, TwoPasses };

void run(Pattern p, Kernel k, const Arrays &arr, int threads) {
    if (p == Pattern::OnePass) run_one_pass(k, arr, threads);
    else if (p == Pattern::TwoPasses) run_two_pass(k, arr, threads);
    else run_split(k, arr, threads);
}

void probe(benchmark::State &state, Kernel Kernels::*which, Pattern pattern, int arrays_moved, int threads,
           int array_mib) {
    const size_t floats = (size_t(array_mib) << 20) / sizeof(float);
    Arrays &arr = arrays(floats);
    const Kernel k = kernels().*which;
    run(pattern, k, arr, threads);  // warm-up: page tables, thread start-up
    for (auto _ : state) {
        run(pattern, k, arr, threads);
        benchmark::ClobberMemory();
    }
    const double bytes = double(arrays_moved) * double(floats) * sizeof(float);
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
    state.counters["GB/s"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
    state.SetLabel(std::string(kernels().isa) + ", " + std::to_string(threads) + " threads, " +
                   std::to_string(array_mib) + " MiB arrays");
}

}  // namespace

void register_bandwidth_benchmarks(int threads, const std::string &suffix, int array_mib) {
    struct P {
        const char *name;
        Kernel Kernels::*which;
        Pattern pattern;
        int arrays_moved;  // counted as the op counts: 3 for the op's patterns, whatever they read twice
    };
    const P probes[] = {{"copy", &Kernels::copy, Pattern::Stream, 2},
                        {"copy_nt", &Kernels::copy_nt, Pattern::Stream, 2},
                        {"add", &Kernels::add, Pattern::Stream, 3},
                        {"add_nt", &Kernels::add_nt, Pattern::Stream, 3},
                        {"one_pass", &Kernels::add, Pattern::OnePass, 3},
                        {"one_pass_nt", &Kernels::add_nt, Pattern::OnePass, 3},
                        {"two_passes", &Kernels::add, Pattern::TwoPasses, 3},
                        {"two_passes_nt", &Kernels::add_nt, Pattern::TwoPasses, 3}};
    for (const P &p : probes)
        benchmark::RegisterBenchmark(("bandwidth/" + std::string(p.name) + suffix).c_str(), probe, p.which,
                                     p.pattern, p.arrays_moved, threads, array_mib)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
}

}  // namespace fbngrad_bench
