// The FusedBatchNormGradV2 generator: declares the kernel's interface, builds
// the algorithm (algorithm.cpp) and hands it to the schedule for the target.
// The tensor dtypes come from the build as y_backprop.type / x.type /
// x_backprop.type params (float32, float16, or uint16 holding bfloat16 bits).
//
// A class template (CRTP, as Halide's Generator<T> is) so that the tuner's own
// test can derive a deliberately wrong generator with the same interface
// (tests/tune/wrong_generator.cpp) through the hook adjust_inputs(); the
// product registers exactly one generator from it (fbng_generator.cpp).
#pragma once

#include "Halide.h"
#include "algorithm.h"
#include "interface.h"
#include "schedule.h"

namespace fbng {

template <typename Self>
class FusedBatchNormGradT : public Halide::Generator<Self> {
    template <typename T>
    using GeneratorParam = Halide::GeneratorParam<T>;
    template <typename T>
    using Input = Halide::GeneratorInput<T>;
    template <typename T>
    using Output = Halide::GeneratorOutput<T>;
    template <typename T = void, int D = -1>
    using Buffer = Halide::Buffer<T, D>;

public:
    GeneratorParam<Layout> layout{"layout", Layout::NHWC, {{"nhwc", Layout::NHWC}, {"nchw", Layout::NCHW}}};
    GeneratorParam<bool> training{"training", true};
    // The schedule knobs (schedule.h: Knobs): what bench/tune/ searches.
    GeneratorParam<int> vector_multiple{"vector_multiple", 0};
    GeneratorParam<int> rows_per_block{"rows_per_block", 0};
    GeneratorParam<int> rows_per_task{"rows_per_task", 0};
    GeneratorParam<int> elements_per_task{"elements_per_task", 0};
    GeneratorParam<int> sum_pass_order{"sum_pass_order", 0};
    GeneratorParam<int> fuse_passes{"fuse_passes", 0};

    Input<Buffer<void, 3>> y_backprop{"y_backprop"};
    Input<Buffer<void, 3>> x{"x"};
    Input<Buffer<float, 1>> scale{"scale"};
    Input<Buffer<float, 1>> reserve_space_1{"reserve_space_1"};
    Input<Buffer<float, 1>> reserve_space_2{"reserve_space_2"};
    Input<float> epsilon{"epsilon"};
    Input<bool> rs2_is_inverse_std{"rs2_is_inverse_std"};

    Output<Buffer<void, 3>> x_backprop{"x_backprop"};
    Output<Buffer<float, 1>> scale_backprop{"scale_backprop"};
    Output<Buffer<float, 1>> offset_backprop{"offset_backprop"};

    // The hook for derived test generators; the product's changes nothing.
    void adjust_inputs(BnGradInputs &) {}

    void generate() {
        using Halide::cast;
        BnGradFuncs f;
        f.layout = layout;
        f.training = training;
        Knobs k;
        k.vector_multiple = vector_multiple;
        k.rows_per_block = rows_per_block;
        k.rows_per_task = rows_per_task;
        k.elements_per_task = elements_per_task;
        k.sum_pass_order = sum_pass_order;
        k.fuse_passes = fuse_passes;
        f.sums_last_sample_first = sums_last_sample_first(this->get_target(), k, f.training);

        const int c_dim = channel_dim(f.layout);
        BnGradInputs in;
        in.y_backprop = y_backprop;
        in.x = x;
        in.scale = scale;
        in.mean = reserve_space_1;
        in.reserve_space_2 = reserve_space_2;
        in.epsilon = epsilon;
        in.rs2_is_inverse_std = rs2_is_inverse_std;
        in.S = y_backprop.dim(spatial_dim(f.layout)).extent();
        in.C = y_backprop.dim(channel_dim(f.layout)).extent();
        in.N = y_backprop.dim(2).extent();
        in.count = cast<int64_t>(in.S) * cast<int64_t>(in.N);
        in.out_type = x_backprop.type();
        static_cast<Self *>(this)->adjust_inputs(in);

        Halide::Func xb = x_backprop, sb = scale_backprop, ob = offset_backprop;
        define_algorithm(f, in, xb, sb, ob);

        // The constraints every fbngrad pipeline shares (interface.h).
        Halide::Expr C = y_backprop.dim(c_dim).extent();
        require_dense_from_zero(y_backprop);
        require_dense_from_zero(x);
        require_dense_from_zero(x_backprop);
        require_extents_of(x, y_backprop);
        require_extents_of(x_backprop, y_backprop);
        for (auto *b : {&scale, &reserve_space_1, &reserve_space_2}) require_channel_vector(*b, C);
        for (auto *b : {&scale_backprop, &offset_backprop}) require_channel_vector(*b, C);

        set_estimates(f.layout);

        BnGradOutputs out{xb, sb, ob};
        if (!this->using_autoscheduler()) schedule_for_target(f, out, this->get_target(), k);
    }

private:
    void set_estimates(Layout l) {
        const Halide::Region r = tensor_estimate(l), channels = channel_estimate();
        y_backprop.set_estimates(r);
        x.set_estimates(r);
        x_backprop.set_estimates(r);
        for (auto *b : {&scale, &reserve_space_1, &reserve_space_2}) b->set_estimates(channels);
        scale_backprop.set_estimates(channels);
        offset_backprop.set_estimates(channels);
        epsilon.set_estimate(0.0001f);
        rs2_is_inverse_std.set_estimate(false);
    }
};

}  // namespace fbng
