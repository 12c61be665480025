// fbngrad_bench: Google Benchmark timings of fbngrad_fused_batch_norm_grad_v2.
//
// Names: impl/dtype/layout/mode/N,H,W,C (Google Benchmark appends "/real_time"),
// e.g. fbngrad/float32/NHWC/train/32,56,56,64/real_time. The shape is always
// given as N,H,W,C; for NCHW the tensors are [N,C,H,W].
//   impl  fbngrad        the dispatcher's pick
//         fbngrad-<isa>  dispatch restricted to one ISA (fbngrad_force_isa), one per
//                        CPU ISA of the variant table (fbngrad_variant_count/_variant)
//                        that this CPU supports
//         naive          a plain two-pass, single-threaded C++ loop (below)
// Shapes: the batch-norm layers of ResNet-50 at N=32 and a few mobile-sized ones.
//
// Every impl's output is checked once per shape against fbngrad::ref (the
// double-precision oracle) before it is timed; a mismatch skips it with an error.
// Counters: bytes_per_second and GB/s count 3 tensors per iteration (x, y_backprop
// read, x_backprop written); times are wall-clock (UseRealTime: fbngrad is multi-threaded).
//
// Extra flags (taken out before Google Benchmark sees the rest):
//   --fbngrad_threads=N   fbngrad_set_num_threads(N) (default: one per core)
// Without --benchmark_filter the run is limited to a default subset (fbngrad and
// naive, float32, both layouts and modes, every shape: about 100 benchmarks);
// --benchmark_filter=all runs the whole matrix (every dtype and impl).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "fbngrad/fbngrad.h"
#include "half.h"
#include "reference.h"

namespace {

struct Shape {
    int64_t n, h, w, c;
};

const Shape kShapes[] = {
    // ResNet-50 (N = 32)
    {32, 112, 112, 64}, {32, 56, 56, 64}, {32, 56, 56, 256}, {32, 28, 28, 128}, {32, 28, 28, 512},
    {32, 14, 14, 256}, {32, 14, 14, 1024}, {32, 7, 7, 512}, {32, 7, 7, 2048},
    // mobile-sized
    {1, 56, 56, 24}, {4, 28, 28, 32}, {8, 14, 14, 96},
};

const char *kDefaultFilter = "^(fbngrad|naive)/float32/";

const char *dtype_name(fbngrad_dtype d) {
    switch (d) {
    case FBNGRAD_FLOAT16: return "float16";
    case FBNGRAD_BFLOAT16: return "bfloat16";
    default: return "float32";
    }
}

std::string shape_name(const Shape &s) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%lld,%lld,%lld,%lld", (long long)s.n, (long long)s.h, (long long)s.w,
                  (long long)s.c);
    return buf;
}

// ---- inputs: generated once per (dtype, layout, shape), kept for the next benchmark ----

struct Inputs {
    fbngrad_dtype dtype;
    fbngrad_layout layout;
    Shape s;
    int64_t dims[4];
    int64_t elements;
    std::vector<uint8_t> dy, x;                 // dtype elements
    std::vector<float> scale, mean, var;        // [C]; mean/var: batch statistics of x
};

std::string inputs_key(fbngrad_dtype d, fbngrad_layout l, const Shape &s) {
    return std::string(dtype_name(d)) + (l == FBNGRAD_NHWC ? "/NHWC/" : "/NCHW/") + shape_name(s);
}

// A single slot: the benchmarks are registered with the shape outside the mode and
// impl loops, so consecutive benchmarks share inputs and memory stays bounded.
std::string g_inputs_key;
std::unique_ptr<Inputs> g_inputs;

const Inputs &get_inputs(fbngrad_dtype dtype, fbngrad_layout layout, const Shape &s) {
    std::string key = inputs_key(dtype, layout, s);
    if (g_inputs && g_inputs_key == key) return *g_inputs;
    g_inputs.reset();
    auto in = std::make_unique<Inputs>();
    in->dtype = dtype;
    in->layout = layout;
    in->s = s;
    if (layout == FBNGRAD_NHWC) {
        int64_t d[4] = {s.n, s.h, s.w, s.c};
        std::memcpy(in->dims, d, sizeof d);
    } else {
        int64_t d[4] = {s.n, s.c, s.h, s.w};
        std::memcpy(in->dims, d, sizeof d);
    }
    in->elements = s.n * s.h * s.w * s.c;
    const int es = fbngrad::ref::dtype_size(dtype);
    in->dy.resize(size_t(in->elements) * es);
    in->x.resize(size_t(in->elements) * es);
    std::mt19937_64 rng(0x5eed0000u + uint64_t(s.n * 131 + s.h * 17 + s.c) + uint64_t(dtype) * 7 + uint64_t(layout));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int64_t i = 0; i < in->elements; ++i) {
        fbngrad::ref::store(dtype, in->dy.data(), i, u(rng));
        fbngrad::ref::store(dtype, in->x.data(), i, 0.25f + 1.5f * u(rng));
    }
    const int64_t C = s.c, S = s.h * s.w, M = s.n * S;
    in->scale.resize(C);
    for (auto &v : in->scale) v = 0.5f + 0.5f * (u(rng) + 1.0f);
    // Batch statistics of the (rounded) x, in double: what the forward op would have saved.
    std::vector<double> sum(C, 0.0), sq(C, 0.0);
    for (int64_t n = 0; n < s.n; ++n)
        for (int64_t p = 0; p < S; ++p)
            for (int64_t c = 0; c < C; ++c) {
                int64_t i = layout == FBNGRAD_NHWC ? (n * S + p) * C + c : (n * C + c) * S + p;
                double v = fbngrad::ref::load(dtype, in->x.data(), i);
                sum[c] += v;
                sq[c] += v * v;
            }
    in->mean.resize(C);
    in->var.resize(C);
    for (int64_t c = 0; c < C; ++c) {
        double m = sum[c] / double(M);
        in->mean[c] = float(m);
        in->var[c] = float(std::max(0.0, sq[c] / double(M) - m * m));
    }
    g_inputs_key = key;
    g_inputs = std::move(in);
    return *g_inputs;
}

fbngrad::ref::Problem problem(const Inputs &in, bool training, float epsilon) {
    fbngrad::ref::Problem p;
    p.dtype = in.dtype;
    p.layout = in.layout;
    p.rank = 4;
    for (int d = 0; d < 4; ++d) p.shape[d] = in.dims[d];
    p.y_backprop = in.dy.data();
    p.x = in.x.data();
    p.scale = in.scale.data();
    p.mean = in.mean.data();
    p.reserve_space_2 = in.var.data();
    p.epsilon = epsilon;
    p.is_training = training;
    return p;
}

// The oracle's answer, one slot (same ordering argument as the inputs).
std::string g_expected_key;
std::unique_ptr<fbngrad::ref::Expected> g_expected;

const fbngrad::ref::Expected &get_expected(const Inputs &in, bool training, float epsilon) {
    std::string key = inputs_key(in.dtype, in.layout, in.s) + (training ? "/train" : "/infer");
    if (g_expected && g_expected_key == key) return *g_expected;
    g_expected.reset();
    g_expected = std::make_unique<fbngrad::ref::Expected>(fbngrad::ref::compute(problem(in, training, epsilon)));
    g_expected_key = key;
    return *g_expected;
}

// ---- the naive baseline ----------------------------------------------------------------
// Pass 1: per-channel float sums of dy and dy*(x - mean); pass 2: x_backprop.
// Single-threaded, in memory order, float arithmetic, converting with half.h.

struct F32 {
    using T = float;
    static float load(T v) { return v; }
    static T store(float v) { return v; }
};
struct F16 {
    using T = uint16_t;
    static float load(T v) { return fbngrad::f16_to_float(v); }
    static T store(float v) { return fbngrad::float_to_f16(v); }
};
struct BF16 {
    using T = uint16_t;
    static float load(T v) { return fbngrad::bf16_to_float(v); }
    static T store(float v) { return fbngrad::float_to_bf16(v); }
};

template <class E>
void naive_impl(const Inputs &in, bool training, float epsilon, void *x_backprop_, float *scale_backprop,
                float *offset_backprop) {
    using T = typename E::T;
    const T *dy = reinterpret_cast<const T *>(in.dy.data());
    const T *x = reinterpret_cast<const T *>(in.x.data());
    T *dx = static_cast<T *>(x_backprop_);
    const int64_t N = in.s.n, C = in.s.c, S = in.s.h * in.s.w, M = N * S;
    const float *mean = in.mean.data();

    std::vector<float> sum_dy(C, 0.0f), sum_dyxc(C, 0.0f), inv(C), a(C), dy_mean(C), k(C);
    if (in.layout == FBNGRAD_NHWC) {
        for (int64_t r = 0; r < M; ++r)
            for (int64_t c = 0; c < C; ++c) {
                float g = E::load(dy[r * C + c]);
                sum_dy[c] += g;
                sum_dyxc[c] += g * (E::load(x[r * C + c]) - mean[c]);
            }
    } else {
        for (int64_t n = 0; n < N; ++n)
            for (int64_t c = 0; c < C; ++c) {
                const int64_t base = (n * C + c) * S;
                for (int64_t p = 0; p < S; ++p) {
                    float g = E::load(dy[base + p]);
                    sum_dy[c] += g;
                    sum_dyxc[c] += g * (E::load(x[base + p]) - mean[c]);
                }
            }
    }
    for (int64_t c = 0; c < C; ++c) {
        inv[c] = 1.0f / std::sqrt(in.var[c] + epsilon);
        a[c] = in.scale[c] * inv[c];
        dy_mean[c] = sum_dy[c] / float(M);
        k[c] = inv[c] * inv[c] * sum_dyxc[c] / float(M);
        scale_backprop[c] = sum_dyxc[c] * inv[c];
        offset_backprop[c] = sum_dy[c];
    }
    auto value = [&](int64_t i, int64_t c) {
        float g = E::load(dy[i]);
        if (!training) return g * a[c];
        float xc = E::load(x[i]) - mean[c];
        return a[c] * (g - dy_mean[c] - xc * k[c]);
    };
    if (in.layout == FBNGRAD_NHWC) {
        for (int64_t r = 0; r < M; ++r)
            for (int64_t c = 0; c < C; ++c) dx[r * C + c] = E::store(value(r * C + c, c));
    } else {
        for (int64_t n = 0; n < N; ++n)
            for (int64_t c = 0; c < C; ++c) {
                const int64_t base = (n * C + c) * S;
                for (int64_t p = 0; p < S; ++p) dx[base + p] = E::store(value(base + p, c));
            }
    }
}

void naive(const Inputs &in, bool training, float epsilon, void *dx, float *sb, float *ob) {
    switch (in.dtype) {
    case FBNGRAD_FLOAT16: naive_impl<F16>(in, training, epsilon, dx, sb, ob); break;
    case FBNGRAD_BFLOAT16: naive_impl<BF16>(in, training, epsilon, dx, sb, ob); break;
    default: naive_impl<F32>(in, training, epsilon, dx, sb, ob);
    }
}

// ---- the benchmark -----------------------------------------------------------------------

struct Case {
    std::string name;  // the benchmark's name (benchmark 1.7.1's State has no name())
    std::string impl;  // "fbngrad", "fbngrad-<isa>", "naive"
    std::string isa;   // forced ISA for fbngrad-<isa>
    fbngrad_dtype dtype;
    fbngrad_layout layout;
    bool training;
    Shape shape;
};

std::string g_startup_isa;                        // FBNGRAD_ISA's choice, restored after each forced run
std::map<std::string, std::string> g_verified;    // benchmark name -> "" (ok) or the error

struct Outputs {
    std::vector<uint8_t> dx;
    std::vector<float> sb, ob;
};

bool run_fbngrad(const Inputs &in, bool training, float epsilon, Outputs &o, std::string *err) {
    fbngrad_tensor dy = fbngrad_make_tensor(const_cast<uint8_t *>(in.dy.data()), in.dtype, 4, in.dims, in.layout);
    fbngrad_tensor x = fbngrad_make_tensor(const_cast<uint8_t *>(in.x.data()), in.dtype, 4, in.dims, in.layout);
    const int64_t c[1] = {in.s.c};
    fbngrad_tensor scale = fbngrad_make_tensor(const_cast<float *>(in.scale.data()), FBNGRAD_FLOAT32, 1, c, FBNGRAD_NHWC);
    fbngrad_tensor mean = fbngrad_make_tensor(const_cast<float *>(in.mean.data()), FBNGRAD_FLOAT32, 1, c, FBNGRAD_NHWC);
    fbngrad_tensor var = fbngrad_make_tensor(const_cast<float *>(in.var.data()), FBNGRAD_FLOAT32, 1, c, FBNGRAD_NHWC);
    fbngrad_tensor dx = fbngrad_make_tensor(o.dx.data(), in.dtype, 4, in.dims, in.layout);
    fbngrad_tensor sb = fbngrad_make_tensor(o.sb.data(), FBNGRAD_FLOAT32, 1, c, FBNGRAD_NHWC);
    fbngrad_tensor ob = fbngrad_make_tensor(o.ob.data(), FBNGRAD_FLOAT32, 1, c, FBNGRAD_NHWC);
    fbngrad_attrs attrs;
    fbngrad_attrs_init(&attrs);
    attrs.epsilon = epsilon;
    attrs.is_training = training ? 1 : 0;
    fbngrad_status st;
    if (fbngrad_fused_batch_norm_grad_v2(&dy, &x, &scale, &mean, &var, &attrs, &dx, &sb, &ob, &st) != FBNGRAD_OK) {
        *err = st.message;
        return false;
    }
    return true;
}

void restore_isa() { fbngrad_force_isa(g_startup_isa.c_str(), nullptr); }

void bench(benchmark::State &state, Case cs) {
    const float epsilon = 0.0001f;
    const std::string &name = cs.name;
    const Inputs &in = get_inputs(cs.dtype, cs.layout, cs.shape);
    const int64_t C = cs.shape.c;
    Outputs o;
    o.dx.assign(in.dy.size(), 0);
    o.sb.assign(C, 0.0f);
    o.ob.assign(C, 0.0f);

    const bool is_naive = cs.impl == "naive";
    if (!cs.isa.empty()) {
        fbngrad_status st;
        if (fbngrad_force_isa(cs.isa.c_str(), &st) != FBNGRAD_OK) {
            state.SkipWithError(("fbngrad_force_isa: " + std::string(st.message)).c_str());
            return;
        }
    }
    if (is_naive) {
        state.SetLabel("single-threaded loop");
    } else {
        const fbngrad_variant_info *v = fbngrad_selected_variant(cs.dtype, cs.layout, cs.training, FBNGRAD_CPU);
        state.SetLabel(v ? v->name : "(no variant)");
    }

    auto once = [&](std::string *err) -> bool {
        if (is_naive) {
            naive(in, cs.training, epsilon, o.dx.data(), o.sb.data(), o.ob.data());
            return true;
        }
        return run_fbngrad(in, cs.training, epsilon, o, err);
    };

    // Check against the oracle once per benchmark (Google Benchmark calls this function
    // several times while it picks the iteration count).
    auto it = g_verified.find(name);
    if (it == g_verified.end()) {
        std::string err;
        if (once(&err)) {
            const auto &e = get_expected(in, cs.training, epsilon);
            auto cmp = fbngrad::ref::compare(problem(in, cs.training, epsilon), e, o.dx.data(), o.sb.data(), o.ob.data());
            if (!cmp.ok())
                err = "disagrees with fbngrad::ref: " + std::to_string(cmp.mismatches) + " mismatches, first " +
                      cmp.first_mismatch;
        }
        it = g_verified.emplace(name, err).first;
    }
    if (!it->second.empty()) {
        if (!cs.isa.empty()) restore_isa();
        state.SkipWithError(it->second.c_str());
        return;
    }

    std::string err;
    for (auto _ : state) {
        if (!once(&err)) {
            state.SkipWithError(err.c_str());
            break;
        }
        benchmark::DoNotOptimize(o.dx.data());
        benchmark::ClobberMemory();
    }
    if (!cs.isa.empty()) restore_isa();

    const double bytes = 3.0 * double(in.elements) * fbngrad::ref::dtype_size(cs.dtype);
    state.SetBytesProcessed(int64_t(state.iterations()) * int64_t(bytes));
    state.counters["GB/s"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

// The CPU ISAs of the variant table, in dispatch order, that this CPU supports.
std::vector<std::string> supported_isas() {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (int32_t i = 0; i < fbngrad_variant_count(); ++i) {
        const fbngrad_variant_info *v = fbngrad_variant(i);
        if (!v || v->device != FBNGRAD_CPU || !v->supported) continue;
        if (seen.insert(v->isa).second) out.push_back(v->isa);
    }
    return out;
}

void register_all() {
    std::vector<std::string> isas = supported_isas();
    const fbngrad_dtype dtypes[] = {FBNGRAD_FLOAT32, FBNGRAD_FLOAT16, FBNGRAD_BFLOAT16};
    const fbngrad_layout layouts[] = {FBNGRAD_NHWC, FBNGRAD_NCHW};
    for (fbngrad_dtype d : dtypes)
        for (fbngrad_layout l : layouts)
            for (const Shape &s : kShapes)
                for (int training = 1; training >= 0; --training) {
                    std::vector<std::pair<std::string, std::string>> impls;  // impl, isa
                    impls.push_back({"fbngrad", ""});
                    for (const auto &isa : isas) impls.push_back({"fbngrad-" + isa, isa});
                    impls.push_back({"naive", ""});
                    for (const auto &[impl, isa] : impls) {
                        std::string name = impl + "/" + dtype_name(d) + (l == FBNGRAD_NHWC ? "/NHWC/" : "/NCHW/") +
                                           (training ? "train/" : "infer/") + shape_name(s);
                        Case cs{name, impl, isa, d, l, training != 0, s};
                        benchmark::RegisterBenchmark(name.c_str(), bench, cs)
                            ->UseRealTime()
                            ->Unit(benchmark::kMillisecond);
                    }
                }
}

}  // namespace

int main(int argc, char **argv) {
    std::vector<char *> args;
    bool has_filter = false, listing = false;
    int threads = 0;
    for (int i = 0; i < argc; ++i) {
        if (i > 0 && std::strncmp(argv[i], "--fbngrad_threads=", 18) == 0) {
            threads = std::atoi(argv[i] + 18);
            continue;
        }
        if (std::strncmp(argv[i], "--benchmark_filter", 18) == 0) has_filter = true;
        if (std::strncmp(argv[i], "--benchmark_list_tests", 22) == 0) listing = true;
        args.push_back(argv[i]);
    }
    std::string default_filter = std::string("--benchmark_filter=") + kDefaultFilter;
    if (!has_filter && !listing) {
        std::fprintf(stderr,
                     "fbngrad_bench: no --benchmark_filter given, running the default subset %s "
                     "(--benchmark_filter=all runs every dtype and impl)\n",
                     kDefaultFilter);
        args.push_back(default_filter.data());
    }
    if (threads > 0) fbngrad_set_num_threads(threads);
    g_startup_isa = fbngrad_forced_isa();

    int n = int(args.size());
    args.push_back(nullptr);
    benchmark::Initialize(&n, args.data());
    if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;

    benchmark::AddCustomContext("fbngrad_version", fbngrad_version());
    benchmark::AddCustomContext("fbngrad_cpu_features", fbngrad_cpu_features());
    benchmark::AddCustomContext("fbngrad_threads", threads > 0 ? std::to_string(threads) : "default (one per core)");
    std::string isas;
    for (const auto &s : supported_isas()) isas += (isas.empty() ? "" : " ") + s;
    benchmark::AddCustomContext("fbngrad_isas", isas);

    register_all();
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
