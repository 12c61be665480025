#include "algorithm.h"

#include "dtype.h"

using namespace Halide;

namespace fbng {

void define_loads(BnGradFuncs &f, const BnGradInputs &in) {
    const Var &c = f.c, &s = f.s, &n = f.n;
    auto at = [&](const Func &t) { return f.layout == Layout::NHWC ? t(c, s, n) : t(s, c, n); };
    f.S = in.S;
    f.C = in.C;
    f.N = in.N;
    f.storage_bits = Expr(at(in.y_backprop)).type().bits();

    // Cast to float32 right at the load; all arithmetic below is float32.
    f.dy(c, s, n) = load_as_f32(at(in.y_backprop));
    f.xc(c, s, n) = load_as_f32(at(in.x)) - in.mean(c);
}

void define_local_sums(BnGradFuncs &f, const BnGradInputs &in) {
    const Var &c = f.c, &n = f.n;
    // Two-level sums, (c, n) over s, then c over n: a fixed order that schedules
    // may split into fixed-size blocks (rfactor) but never reorder by thread count.
    f.rs = RDom(0, in.S, "rs");
    f.rn = RDom(0, in.N, "rn");
    // partial(c, i) holds sample `sample(i)`; the sum over samples is always
    // sample 0, 1, ..., N-1, whichever order partial is computed in.
    auto sample = [&](Expr i) { return f.sums_last_sample_first ? in.N - 1 - i : i; };
    f.partial(c, n) = Tuple(0.0f, 0.0f);
    {
        Expr d = f.dy(c, f.rs, sample(n));
        f.partial(c, n) = Tuple(f.partial(c, n)[0] + d, f.partial(c, n)[1] + d * f.xc(c, f.rs, sample(n)));
    }
    Expr rn = sample(f.rn);  // sample(sample(i)) == i
    f.sums(c) = Tuple(0.0f, 0.0f);
    f.sums(c) = Tuple(f.sums(c)[0] + f.partial(c, rn)[0], f.sums(c)[1] + f.partial(c, rn)[1]);
}

void define_given_sums(BnGradFuncs &f, const BnGradInputs &in) {
    f.sums(f.c) = Tuple(in.sum_dy(f.c), in.sum_dyxc(f.c));
}

void define_outputs(BnGradFuncs &f, const BnGradInputs &in, Func x_backprop, Func scale_backprop,
                    Func offset_backprop) {
    const Var &c = f.c, &s = f.s, &n = f.n;

    // An exact sqrt and an exact division (strict_float keeps them IEEE).
    Expr rs2 = in.reserve_space_2(c);
    f.inv(c) = select(in.rs2_is_inverse_std, rs2, 1.0f / sqrt(rs2 + in.epsilon));

    Expr sum_dy = f.sums(c)[0], sum_dyxc = f.sums(c)[1];
    Expr inv = f.inv(c);
    scale_backprop(c) = sum_dyxc * inv;
    offset_backprop(c) = sum_dy;

    std::vector<Var> d = f.dims();
    if (f.training) {
        // x_backprop = scale*inv * ((dy - sum_dy/M) - xc * (inv*inv * sum_dyxc/M)).
        // M is rounded to float32 once, from the exact int64 count.
        Expr M = cast<float>(in.count);
        f.coef(c) = Tuple(in.scale(c) * inv, sum_dy / M, (inv * inv) * (sum_dyxc / M));
        Expr v = f.coef(c)[0] * ((f.dy(c, s, n) - f.coef(c)[1]) - f.xc(c, s, n) * f.coef(c)[2]);
        x_backprop(d) = store_from_f32(v, in.out_type);
    } else {
        // Inference needs no sums for x_backprop: one elementwise pass.
        f.coef(c) = in.scale(c) * inv;
        x_backprop(d) = store_from_f32(f.dy(c, s, n) * f.coef(c), in.out_type);
    }
}

void define_algorithm(BnGradFuncs &f, const BnGradInputs &in, Func x_backprop, Func scale_backprop,
                      Func offset_backprop) {
    define_loads(f, in);
    define_local_sums(f, in);
    define_outputs(f, in, x_backprop, scale_backprop, offset_backprop);
}

}  // namespace fbng
