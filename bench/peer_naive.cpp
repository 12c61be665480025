// The naive baseline: pass 1 sums dy and dy*(x - mean) per channel in float, pass 2 writes
// x_backprop. Single-threaded, in memory order, float arithmetic, converting with half.h.
#include <cmath>

#include "half.h"
#include "peer.h"

namespace fbngrad_bench {
namespace {

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
void naive_impl(const Inputs &in, bool training, void *x_backprop_, float *scale_backprop, float *offset_backprop) {
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
        inv[c] = 1.0f / std::sqrt(in.var[c] + kEpsilon);
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

class NaiveRunner : public Runner {
public:
    NaiveRunner(const Inputs &in, const Case &cs, Outputs &o) : in_(in), training_(cs.training), o_(o) {}
    bool run(std::string *) override {
        switch (in_.dtype) {
        case FBNGRAD_FLOAT16: naive_impl<F16>(in_, training_, o_.dx.data(), o_.sb.data(), o_.ob.data()); break;
        case FBNGRAD_BFLOAT16: naive_impl<BF16>(in_, training_, o_.dx.data(), o_.sb.data(), o_.ob.data()); break;
        default: naive_impl<F32>(in_, training_, o_.dx.data(), o_.sb.data(), o_.ob.data());
        }
        return true;
    }
    std::string label() const override { return "single-threaded loop"; }

private:
    const Inputs &in_;
    bool training_;
    Outputs &o_;
};

}  // namespace

Peer naive_peer() {
    return {"naive", [](const Case &) { return std::string(); },
            [](const Inputs &in, const Case &cs, Outputs &o, std::string *) -> std::unique_ptr<Runner> {
                return std::make_unique<NaiveRunner>(in, cs, o);
            },
            [](int) {},  // single-threaded by design
            true};
}

}  // namespace fbngrad_bench
