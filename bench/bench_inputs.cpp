#include "bench_inputs.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fbngrad_bench {

const char *dtype_name(fbngrad_dtype d) {
    switch (d) {
    case FBNGRAD_FLOAT16: return "float16";
    case FBNGRAD_BFLOAT16: return "bfloat16";
    default: return "float32";
    }
}

const char *layout_name(fbngrad_layout l) { return l == FBNGRAD_NHWC ? "NHWC" : "NCHW"; }

std::string shape_name(const Shape &s) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%lld,%lld,%lld,%lld", (long long)s.n, (long long)s.h, (long long)s.w,
                  (long long)s.c);
    return buf;
}

namespace {

// The i-th output of SplitMix64 started at `seed` (Steele, Lea, Flood 2014).
uint64_t splitmix64(uint64_t seed, uint64_t i) {
    uint64_t z = seed + (i + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// 24 random bits scaled to [-1, 1): every step is exact in float.
float uniform_pm1(uint64_t seed, uint64_t i) { return float(splitmix64(seed, i) >> 40) * 0x1p-23f - 1.0f; }

uint64_t stream_seed(const Shape &s, uint64_t stream) {
    uint64_t k = uint64_t(s.n);
    k = k * 1009 + uint64_t(s.h);
    k = k * 1009 + uint64_t(s.w);
    k = k * 1009 + uint64_t(s.c);
    return k * 16 + stream;
}

std::string g_inputs_key;
std::unique_ptr<Inputs> g_inputs;
std::string g_expected_key;
std::unique_ptr<fbngrad::ref::Expected> g_expected;

std::string inputs_key(fbngrad_dtype d, fbngrad_layout l, const Shape &s) {
    return std::string(dtype_name(d)) + "/" + layout_name(l) + "/" + shape_name(s);
}

}  // namespace

const Inputs &get_inputs(fbngrad_dtype dtype, fbngrad_layout layout, const Shape &s) {
    const std::string key = inputs_key(dtype, layout, s);
    if (g_inputs && g_inputs_key == key) return *g_inputs;
    g_inputs.reset();  // free the previous shape's tensors first
    auto in = std::make_unique<Inputs>();
    in->dtype = dtype;
    in->layout = layout;
    in->s = s;
    const int64_t nhwc[4] = {s.n, s.h, s.w, s.c}, nchw[4] = {s.n, s.c, s.h, s.w};
    std::memcpy(in->dims, layout == FBNGRAD_NHWC ? nhwc : nchw, sizeof nhwc);
    in->elements = s.elements();
    const int es = fbngrad::ref::dtype_size(dtype);
    in->dy.resize(size_t(in->elements) * es);
    in->x.resize(size_t(in->elements) * es);

    const int64_t C = s.c, S = s.h * s.w, M = s.n * S;
    const uint64_t seed_dy = stream_seed(s, 1), seed_x = stream_seed(s, 2), seed_scale = stream_seed(s, 3);
    std::vector<int64_t> sum_k(C, 0);            // x = k * 2^-24: sums of k are exact in int64
    std::vector<unsigned __int128> sum_kk(C, 0);  // and of k^2 in 128 bits
    for (int64_t r = 0; r < M; ++r) {
        const int64_t n = r / S, p = r % S;
        for (int64_t c = 0; c < C; ++c) {
            const int64_t logical = r * C + c;
            const int64_t at = layout == FBNGRAD_NHWC ? logical : (n * C + c) * S + p;
            fbngrad::ref::store(dtype, in->dy.data(), at, uniform_pm1(seed_dy, uint64_t(logical)));
            fbngrad::ref::store(dtype, in->x.data(), at,
                                float(0.25 + 1.5 * double(uniform_pm1(seed_x, uint64_t(logical)))));
            const double xk = std::ldexp(fbngrad::ref::load(dtype, in->x.data(), at), 24);
            const int64_t k = int64_t(xk);
            if (double(k) != xk) {
                std::fprintf(stderr, "fbngrad_bench: input generator: x is not a multiple of 2^-24\n");
                std::abort();
            }
            sum_k[c] += k;
            sum_kk[c] += (unsigned __int128)(k < 0 ? -k : k) * (unsigned __int128)(k < 0 ? -k : k);
        }
    }
    in->scale.resize(C);
    in->mean.resize(C);
    in->var.resize(C);
    for (int64_t c = 0; c < C; ++c) {
        in->scale[c] = float(0.75 + 0.5 * double(uniform_pm1(seed_scale, uint64_t(c))));
        // One rounding of the exact integers to double, then fixed double steps (tf_bench.py
        // does the same in Python floats).
        const double m = double(sum_k[c]) / double(M);
        const double v = double(sum_kk[c]) / double(M) - m * m;
        in->mean[c] = float(std::ldexp(m, -24));
        in->var[c] = float(std::ldexp(v > 0.0 ? v : 0.0, -48));
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

const fbngrad::ref::Expected &get_expected(const Inputs &in, bool training, float epsilon) {
    const std::string key = inputs_key(in.dtype, in.layout, in.s) + (training ? "/train" : "/infer");
    if (g_expected && g_expected_key == key) return *g_expected;
    g_expected.reset();
    g_expected = std::make_unique<fbngrad::ref::Expected>(fbngrad::ref::compute(problem(in, training, epsilon)));
    g_expected_key = key;
    return *g_expected;
}

std::string input_digest(const Inputs &in) {
    uint64_t h = 0xcbf29ce484222325ull;
    auto mix = [&h](const void *data, size_t bytes) {
        const auto *p = static_cast<const uint8_t *>(data);
        for (size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
    };
    mix(in.dy.data(), in.dy.size());
    mix(in.x.data(), in.x.size());
    mix(in.scale.data(), in.scale.size() * sizeof(float));
    mix(in.mean.data(), in.mean.size() * sizeof(float));
    mix(in.var.data(), in.var.size() * sizeof(float));
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", (unsigned long long)h);
    return buf;
}

}  // namespace fbngrad_bench
