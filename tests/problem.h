// A test problem: inputs generated from a seed, rounded to the dtype, the
// outputs allocated, and helpers to run the op and compare with the reference.
#pragma once

#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "fbngrad/fbngrad.h"
#include "reference.h"

namespace fbngrad::test {

inline std::string dtype_str(fbngrad_dtype d) {
    return d == FBNGRAD_FLOAT32 ? "float32" : d == FBNGRAD_FLOAT16 ? "float16" : "bfloat16";
}

// Whether this build has variants of the row: a selective build leaves rows
// out (cmake/variants.cmake, docs/edge-builds.md), and the tests then skip them.
inline bool built(fbngrad_dtype dtype, fbngrad_layout layout, bool training, fbngrad_device device = FBNGRAD_CPU) {
    for (int32_t i = 0; i < fbngrad_variant_count(); ++i) {
        const fbngrad_variant_info *v = fbngrad_variant(i);
        if (v->dtype == dtype && v->layout == layout && (v->is_training != 0) == training && v->device == device)
            return true;
    }
    return false;
}

// Whether this build has the split phase (FBNGRAD_SPLIT_PHASE): a reduce of
// one element is refused, naming the option, where it was left out.
inline bool split_phase_built() {
    float one_value[1] = {0}, sums[2] = {0, 0};
    const int64_t shape[4] = {1, 1, 1, 1}, one = 1;
    fbngrad_tensor t = fbngrad_make_tensor(one_value, FBNGRAD_FLOAT32, 4, shape, FBNGRAD_NHWC);
    fbngrad_tensor m = fbngrad_make_tensor(one_value, FBNGRAD_FLOAT32, 1, &one, FBNGRAD_NHWC);
    fbngrad_tensor a = fbngrad_make_tensor(sums, FBNGRAD_FLOAT32, 1, &one, FBNGRAD_NHWC);
    fbngrad_tensor b = fbngrad_make_tensor(sums + 1, FBNGRAD_FLOAT32, 1, &one, FBNGRAD_NHWC);
    int64_t count = 0;
    fbngrad_status st;
    return !(fbngrad_split_phase_reduce(&t, &t, &m, &a, &b, &count, &st) == FBNGRAD_UNIMPLEMENTED &&
             std::string(st.message).find("FBNGRAD_SPLIT_PHASE") != std::string::npos);
}

// In a test body (gtest): skips the test where this build left the split phase out.
#define FBNGRAD_SKIP_UNLESS_SPLIT_PHASE()                                                       \
    do {                                                                                       \
        if (!::fbngrad::test::split_phase_built())                                             \
            GTEST_SKIP() << "the split phase was left out of this build (FBNGRAD_SPLIT_PHASE)"; \
    } while (0)

// In a test body (gtest): skips the test where this build left the row out.
#define FBNGRAD_SKIP_UNLESS_BUILT(dtype, layout, training)                                            \
    do {                                                                                            \
        if (!::fbngrad::test::built(dtype, layout, training))                                       \
            GTEST_SKIP() << "left out of this build (FBNGRAD_DTYPES, FBNGRAD_LAYOUTS, FBNGRAD_MODES)"; \
    } while (0)

struct TestProblem {
    ref::Problem p;
    std::vector<uint8_t> dy, x, xb;  // raw elements of the dtype
    std::vector<float> scale, mean, rs2, sb, ob;
    fbngrad_attrs attrs;

    // shape is in the layout's order: [N,H,W,C] / [N,C,H,W] (or the 5-D forms).
    TestProblem(fbngrad_dtype dtype, fbngrad_layout layout, std::vector<int64_t> shape, bool training,
                bool inverse_std = false, uint32_t seed = 1) {
        p.dtype = dtype;
        p.layout = layout;
        p.rank = int(shape.size());
        for (int d = 0; d < p.rank; ++d) p.shape[d] = shape[d];
        p.is_training = training;
        p.rs2_is_inverse_std = inverse_std;
        p.epsilon = 0.001f;
        fbngrad_attrs_init(&attrs);
        attrs.epsilon = p.epsilon;
        attrs.is_training = training;
        attrs.reserve_space_2_is = inverse_std ? FBNGRAD_RS2_INVERSE_STD : FBNGRAD_RS2_VARIANCE;

        const int64_t E = p.elements(), C = p.channels();
        const int es = ref::dtype_size(dtype);
        dy.assign(E * es, 0);
        x.assign(E * es, 0);
        xb.assign(E * es, 0xAB);  // a sentinel: tests can tell written from untouched
        sb.assign(C, -777.0f);
        ob.assign(C, -777.0f);
        std::mt19937 rng(seed);
        std::uniform_real_distribution<float> u(-1.0f, 1.0f);
        for (int64_t i = 0; i < E; ++i) {
            ref::store(dtype, dy.data(), i, u(rng));
            ref::store(dtype, x.data(), i, 0.5f + 2.0f * u(rng));
        }
        // Per-channel statistics of x itself, as the forward op would have saved
        // them: the realistic case, where x - mean cancels.
        std::vector<double> sum(C, 0.0), sum2(C, 0.0), cnt(C, 0.0);
        const int c_dim = layout == FBNGRAD_NHWC ? p.rank - 1 : 1;
        int64_t inner = 1;
        for (int d = c_dim + 1; d < p.rank; ++d) inner *= shape[d];
        for (int64_t i = 0; i < E; ++i) {
            int64_t c = (i / inner) % C;
            double v = ref::load(dtype, x.data(), i);
            sum[c] += v;
            sum2[c] += v * v;
            cnt[c] += 1;
        }
        scale.resize(C);
        mean.resize(C);
        rs2.resize(C);
        for (int64_t c = 0; c < C; ++c) {
            double m = cnt[c] ? sum[c] / cnt[c] : 0.0;
            double var = cnt[c] ? sum2[c] / cnt[c] - m * m : 1.0;
            if (var < 1e-3) var = 0.25 + 0.1 * double(c % 7);  // N*H*W = 1: no spread to measure
            mean[c] = float(m);
            scale[c] = 0.5f + 0.5f * (u(rng) + 1.0f);
            rs2[c] = inverse_std ? float(1.0 / std::sqrt(var + p.epsilon)) : float(var);
        }
        bind();
    }
    TestProblem(const TestProblem &) = delete;

    void bind() {
        p.y_backprop = dy.data();
        p.x = x.data();
        p.scale = scale.data();
        p.mean = mean.data();
        p.reserve_space_2 = rs2.data();
    }

    fbngrad_tensor tensor(void *data) const {
        return fbngrad_make_tensor(data, p.dtype, p.rank, p.shape, p.layout);
    }
    fbngrad_tensor vec(void *data) const {
        int64_t C = p.channels();
        return fbngrad_make_tensor(data, FBNGRAD_FLOAT32, 1, &C, FBNGRAD_NHWC);
    }

    fbngrad_code run(fbngrad_status *st) {
        fbngrad_tensor tdy = tensor(dy.data()), tx = tensor(x.data()), txb = tensor(xb.data());
        fbngrad_tensor tsc = vec(scale.data()), tm = vec(mean.data()), tv = vec(rs2.data());
        fbngrad_tensor tsb = vec(sb.data()), tob = vec(ob.data());
        return fbngrad_fused_batch_norm_grad_v2(&tdy, &tx, &tsc, &tm, &tv, &attrs, &txb, &tsb, &tob, st);
    }

    ref::Comparison check() const {
        ref::Expected e = ref::compute(p);
        return ref::compare(p, e, xb.data(), sb.data(), ob.data());
    }

    // The outputs' bytes in one string (x_backprop, scale_backprop, offset_backprop), to compare bits.
    std::string output_bits() const {
        std::string s(reinterpret_cast<const char *>(xb.data()), xb.size());
        s.append(reinterpret_cast<const char *>(sb.data()), sb.size() * sizeof(float));
        s.append(reinterpret_cast<const char *>(ob.data()), ob.size() * sizeof(float));
        return s;
    }

    std::string describe() const {
        std::string s = dtype_str(p.dtype) + (p.layout == FBNGRAD_NHWC ? " channels-last " : " channels-first ") + "[";
        for (int d = 0; d < p.rank; ++d) s += (d ? "," : "") + std::to_string(p.shape[d]);
        return s + "] " + (p.is_training ? "train" : "infer") + (p.rs2_is_inverse_std ? " inverse_std" : "");
    }
};

}  // namespace fbngrad::test
