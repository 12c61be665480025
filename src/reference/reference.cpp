#include "reference.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "half.h"

namespace fbngrad::ref {
namespace {

constexpr double kU = 1.0 / 16777216.0;  // 2^-24: float32 unit roundoff

double unit_roundoff(fbngrad_dtype t) {
    switch (t) {
    case FBNGRAD_FLOAT16: return 1.0 / 2048.0;
    case FBNGRAD_BFLOAT16: return 1.0 / 256.0;
    default: return kU;
    }
}

// The smallest magnitude that rounds to infinity in the type (round to nearest
// even): the largest finite value plus half an ulp.
double overflow_threshold(fbngrad_dtype t) {
    switch (t) {
    case FBNGRAD_FLOAT16: return 65520.0;  // 65504 + 16
    default: return std::ldexp(2.0 - std::ldexp(1.0, -24), 127);  // float32 and bfloat16: 2^128 - 2^103
    }
}

double smallest_subnormal(fbngrad_dtype t) {
    switch (t) {
    case FBNGRAD_FLOAT16: return std::ldexp(1.0, -24);
    case FBNGRAD_BFLOAT16: return std::ldexp(1.0, -133);
    default: return std::ldexp(1.0, -149);
    }
}

// Index of element (n, s, c) of a dense tensor, s over the merged spatial dims.
struct Indexer {
    fbngrad_layout layout;
    int64_t N, S, C;
    int64_t operator()(int64_t n, int64_t s, int64_t c) const {
        return layout == FBNGRAD_NHWC ? (n * S + s) * C + c : (n * C + c) * S + s;
    }
};

Indexer indexer(const Problem &p) {
    Indexer ix{p.layout, p.shape[0], 1, p.channels()};
    int c_dim = p.layout == FBNGRAD_NHWC ? p.rank - 1 : 1;
    for (int d = 1; d < p.rank; ++d)
        if (d != c_dim) ix.S *= p.shape[d];
    return ix;
}

std::string describe(const char *what, int64_t i, double got, double want, double tol) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s[%lld]: got %.9g, expected %.9g +- %.3g", what, (long long)i, got, want, tol);
    return buf;
}

}  // namespace

int64_t Problem::channels() const { return shape[layout == FBNGRAD_NHWC ? rank - 1 : 1]; }

int64_t Problem::elements() const {
    int64_t e = 1;
    for (int d = 0; d < rank; ++d) e *= shape[d];
    return e;
}

int dtype_size(fbngrad_dtype dtype) { return dtype == FBNGRAD_FLOAT32 ? 4 : 2; }

double load(fbngrad_dtype dtype, const void *data, int64_t i) {
    switch (dtype) {
    case FBNGRAD_FLOAT16: return f16_to_float(static_cast<const uint16_t *>(data)[i]);
    case FBNGRAD_BFLOAT16: return bf16_to_float(static_cast<const uint16_t *>(data)[i]);
    default: return static_cast<const float *>(data)[i];
    }
}

void store(fbngrad_dtype dtype, void *data, int64_t i, float v) {
    switch (dtype) {
    case FBNGRAD_FLOAT16: static_cast<uint16_t *>(data)[i] = float_to_f16(v); break;
    case FBNGRAD_BFLOAT16: static_cast<uint16_t *>(data)[i] = float_to_bf16(v); break;
    default: static_cast<float *>(data)[i] = v;
    }
}

Expected compute(const Problem &p) {
    const Indexer ix = indexer(p);
    const int64_t C = ix.C, M = ix.N * ix.S;
    Expected e;
    e.x_backprop.assign(p.elements(), 0.0);
    e.x_backprop_tol.assign(p.elements(), 0.0);
    e.scale_backprop.assign(C, 0.0);
    e.offset_backprop.assign(C, 0.0);
    e.scale_backprop_tol.assign(C, 0.0);
    e.offset_backprop_tol.assign(C, 0.0);
    if (M == 0) return e;

    const double uT = unit_roundoff(p.dtype), floorT = smallest_subnormal(p.dtype);
    const double k_sum = (16.0 + 2.0 * std::sqrt(double(M))) * kU;
    for (int64_t c = 0; c < C; ++c) {
        const double mean = p.mean[c], scale = p.scale[c];
        const double inv = p.rs2_is_inverse_std ? double(p.reserve_space_2[c])
                                                : 1.0 / std::sqrt(double(p.reserve_space_2[c]) + double(p.epsilon));
        double sum_dy = 0, sum_dyxc = 0, abs_dy = 0, abs_dyxc = 0;
        for (int64_t n = 0; n < ix.N; ++n)
            for (int64_t s = 0; s < ix.S; ++s) {
                int64_t i = ix(n, s, c);
                double dy = load(p.dtype, p.y_backprop, i), xc = load(p.dtype, p.x, i) - mean;
                sum_dy += dy;
                sum_dyxc += dy * xc;
                abs_dy += std::fabs(dy);
                abs_dyxc += std::fabs(dy * xc);
            }
        const double err_dy = k_sum * abs_dy, err_dyxc = k_sum * abs_dyxc;
        e.offset_backprop[c] = sum_dy;
        e.offset_backprop_tol[c] = err_dy;
        e.scale_backprop[c] = sum_dyxc * inv;
        e.scale_backprop_tol[c] = err_dyxc * std::fabs(inv) + 8 * kU * std::fabs(sum_dyxc * inv);

        const double a = scale * inv, dy_mean = sum_dy / double(M), k2 = inv * inv * sum_dyxc / double(M);
        // The op's float32 factor scale*inv is infinite (an infinite scale, or a
        // product past float32's largest): x_backprop is that infinity times a
        // finite factor, so only the factor's sign (or its being zero: NaN) counts.
        const bool a_infinite = std::fabs(a) >= overflow_threshold(FBNGRAD_FLOAT32);
        const double inf = std::numeric_limits<double>::infinity();
        auto times_infinite_a = [&](double factor) {
            return std::isnan(factor) || factor == 0 ? std::nan("") : std::copysign(inf, a * factor);
        };
        for (int64_t n = 0; n < ix.N; ++n)
            for (int64_t s = 0; s < ix.S; ++s) {
                int64_t i = ix(n, s, c);
                double dy = load(p.dtype, p.y_backprop, i), xc = load(p.dtype, p.x, i) - mean;
                double v, err;
                if (p.is_training) {
                    const double bracket = dy - dy_mean - xc * k2;
                    const double bracket_err = 8 * kU * (std::fabs(dy) + std::fabs(dy_mean) + std::fabs(xc * k2)) +
                                               err_dy / double(M) + std::fabs(xc) * inv * inv * err_dyxc / double(M);
                    if (a_infinite && !std::isnan(bracket) && !(std::fabs(bracket) > bracket_err)) {
                        // Zero within its rounding error: the float32 bracket may be
                        // +0, -0 or either sign, so +inf, -inf and NaN are all right.
                        e.x_backprop[i] = std::nan("");
                        e.x_backprop_tol[i] = inf;
                        continue;
                    }
                    v = a_infinite ? times_infinite_a(bracket) : a * bracket;
                    err = a_infinite ? 0 : std::fabs(a) * bracket_err;
                } else {
                    v = a_infinite ? times_infinite_a(dy) : dy * a;
                    err = a_infinite ? 0 : 8 * kU * std::fabs(v);
                }
                e.x_backprop[i] = v;
                e.x_backprop_tol[i] = (1 + uT) * err + uT * std::fabs(v) + floorT;
            }
    }
    return e;
}

Comparison compare(const Problem &p, const Expected &e, const void *x_backprop, const float *scale_backprop,
                   const float *offset_backprop) {
    Comparison r;
    // x_backprop is rounded to its type once: a finite value that may round
    // past the type's largest (float16: 65504) may come back as that infinity.
    const double overflow_x = overflow_threshold(p.dtype);
    auto check = [&](const char *what, int64_t i, double got, double want, double tol, double overflow) {
        bool good;
        if (std::isnan(want)) {
            good = std::isinf(tol) ? !std::isfinite(got) : std::isnan(got);
        } else if (std::isinf(want)) {
            good = got == want;
        } else if (std::isinf(got) && std::fabs(want) + tol >= overflow && (got > 0) == (want > 0)) {
            good = true;
        } else if (!std::isfinite(got)) {
            good = false;
        } else {
            double err = std::fabs(got - want);
            r.max_abs_error = std::max(r.max_abs_error, err);
            if (tol > 0) r.worst_ratio = std::max(r.worst_ratio, err / tol);
            good = err <= tol;
        }
        if (!good) {
            if (r.mismatches == 0) r.first_mismatch = describe(what, i, got, want, tol);
            ++r.mismatches;
        }
    };
    for (int64_t i = 0; i < int64_t(e.x_backprop.size()); ++i)
        check("x_backprop", i, load(p.dtype, x_backprop, i), e.x_backprop[i], e.x_backprop_tol[i], overflow_x);
    for (int64_t c = 0; c < int64_t(e.scale_backprop.size()); ++c) {
        const double f32 = overflow_threshold(FBNGRAD_FLOAT32);
        check("scale_backprop", c, scale_backprop[c], e.scale_backprop[c], e.scale_backprop_tol[c], f32);
        check("offset_backprop", c, offset_backprop[c], e.offset_backprop[c], e.offset_backprop_tol[c], f32);
    }
    return r;
}

}  // namespace fbngrad::ref
