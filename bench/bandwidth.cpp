#include "bandwidth.h"

#include <benchmark/benchmark.h>

#include <algorithm>
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
#else
// No portable non-temporal store: the _nt probes are the ordinary ones (said in the label).
void copy_plain(const float *a, const float *, float *d, size_t n) { std::memcpy(d, a, n * sizeof(float)); }
void add_plain(const float *a, const float *b, float *d, size_t n) {
    for (size_t i = 0; i < n; ++i) d[i] = a[i] + b[i];
}
#endif

struct Kernels {
    const char *isa;
    Kernel copy, copy_nt, add, add_nt;
};

const Kernels &kernels() {
    static const Kernels k = [] {
#ifdef FBNGRAD_BENCH_X86
        __builtin_cpu_init();
        if (__builtin_cpu_supports("avx512f"))
            return Kernels{"avx512f", copy_avx512, copy_nt_avx512, add_avx512, add_nt_avx512};
        if (__builtin_cpu_supports("avx")) return Kernels{"avx", copy_avx, copy_nt_avx, add_avx, add_nt_avx};
        return Kernels{"sse2", copy_sse2, copy_nt_sse2, add_sse2, add_nt_sse2};
#else
        return Kernels{"portable loop, no non-temporal stores", copy_plain, copy_plain, add_plain, add_plain};
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

void run_split(Kernel k, const Arrays &arr, int threads) {
    // Chunks of whole 64-byte lines, one per thread.
    const size_t lines = arr.floats / 16, per = (lines + threads - 1) / threads;
    auto part = [&](int t) {
        const size_t b = std::min(lines, t * per) * 16, e = std::min(lines, (t + 1) * per) * 16;
        if (e > b) k(arr.a.get() + b, arr.b.get() + b, arr.d.get() + b, e - b);
    };
    if (threads == 1) {
        part(0);
        return;
    }
    std::vector<std::thread> pool;
    for (int t = 1; t < threads; ++t) pool.emplace_back(part, t);
    part(0);
    for (auto &th : pool) th.join();
}

void probe(benchmark::State &state, Kernel Kernels::*which, int arrays_moved, int threads, int array_mib) {
    const size_t floats = (size_t(array_mib) << 20) / sizeof(float);
    Arrays &arr = arrays(floats);
    const Kernel k = kernels().*which;
    run_split(k, arr, threads);  // warm-up: page tables, thread start-up
    for (auto _ : state) {
        run_split(k, arr, threads);
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
        int arrays_moved;
    };
    const P probes[] = {{"copy", &Kernels::copy, 2},
                        {"copy_nt", &Kernels::copy_nt, 2},
                        {"add", &Kernels::add, 3},
                        {"add_nt", &Kernels::add_nt, 3}};
    for (const P &p : probes)
        benchmark::RegisterBenchmark(("bandwidth/" + std::string(p.name) + suffix).c_str(), probe, p.which,
                                     p.arrays_moved, threads, array_mib)
            ->UseRealTime()
            ->Unit(benchmark::kMillisecond);
}

}  // namespace fbngrad_bench
