// The split-phase generators: FusedBatchNormGradV2 cut at its sums, for batch
// norm synchronized across workers (each holds a shard of the batch; the
// caller allreduces the sums between the two calls with MPI, NCCL, ...).
//
//   batch_norm_grad_reduce: (y_backprop, x, mean)            -> sum_dy, sum_dyxc   [C] each
//   batch_norm_grad_apply:  (y_backprop, x, scale, mean, reserve_space_2,
//                            sum_dy, sum_dyxc, count, eps)   -> x_backprop, scale_backprop,
//                                                               offset_backprop
//
// Both build their Funcs with algorithm.cpp's define_* functions and are
// scheduled by the same schedule entry points as the fused generator, which
// skip the Funcs a phase does not have. So on one worker (reduce over the whole
// batch, then apply with count = its N*spatial) the result has exactly the bits
// of the fused kernel for the same target. The count is an int64 computed on
// the host (the API) and summed by the caller's allreduce.
#include "Halide.h"
#include "algorithm.h"
#include "interface.h"
#include "schedule.h"

using namespace Halide;

namespace fbng {
namespace {

class BatchNormGradReduce : public Generator<BatchNormGradReduce> {
public:
    // The fused generator's params but `training`: the sums do not depend on the mode.
    GeneratorParam<Layout> layout{"layout", Layout::NHWC, {{"nhwc", Layout::NHWC}, {"nchw", Layout::NCHW}}};
    GeneratorParam<int> vector_multiple{"vector_multiple", 0};
    GeneratorParam<int> rows_per_block{"rows_per_block", 0};
    GeneratorParam<int> rows_per_task{"rows_per_task", 0};
    GeneratorParam<int> sum_pass_order{"sum_pass_order", 0};

    Input<Buffer<void, 3>> y_backprop{"y_backprop"};
    Input<Buffer<void, 3>> x{"x"};
    Input<Buffer<float, 1>> reserve_space_1{"reserve_space_1"};

    Output<Buffer<float, 1>> sum_dy{"sum_dy"};
    Output<Buffer<float, 1>> sum_dyxc{"sum_dyxc"};

    void generate() {
        BnGradFuncs f;
        f.layout = layout;
        f.training = false;  // not used: no outputs in this phase
        f.phase = fbng::Phase::Reduce;  // (Generator has a Phase of its own)
        Knobs k;
        k.vector_multiple = vector_multiple;
        k.rows_per_block = rows_per_block;
        k.rows_per_task = rows_per_task;
        k.sum_pass_order = sum_pass_order;
        f.sums_last_sample_first = sums_last_sample_first(get_target(), k, true);

        BnGradInputs in;
        in.y_backprop = y_backprop;
        in.x = x;
        in.mean = reserve_space_1;
        in.S = y_backprop.dim(spatial_dim(f.layout)).extent();
        in.C = y_backprop.dim(channel_dim(f.layout)).extent();
        in.N = y_backprop.dim(2).extent();
        define_loads(f, in);
        define_local_sums(f, in);
        sum_dy(f.c) = f.sums(f.c)[0];
        sum_dyxc(f.c) = f.sums(f.c)[1];

        Expr C = y_backprop.dim(channel_dim(f.layout)).extent();
        require_dense_from_zero(y_backprop);
        require_dense_from_zero(x);
        require_extents_of(x, y_backprop);
        require_channel_vector(reserve_space_1, C);
        require_channel_vector(sum_dy, C);
        require_channel_vector(sum_dyxc, C);

        const Region r = tensor_estimate(f.layout), channels = channel_estimate();
        y_backprop.set_estimates(r);
        x.set_estimates(r);
        reserve_space_1.set_estimates(channels);
        sum_dy.set_estimates(channels);
        sum_dyxc.set_estimates(channels);

        BnGradOutputs out;
        out.sum_dy = sum_dy;
        out.sum_dyxc = sum_dyxc;
        if (!using_autoscheduler()) schedule_for_target(f, out, get_target(), k);
    }
};

class BatchNormGradApply : public Generator<BatchNormGradApply> {
public:
    GeneratorParam<Layout> layout{"layout", Layout::NHWC, {{"nhwc", Layout::NHWC}, {"nchw", Layout::NCHW}}};
    GeneratorParam<bool> training{"training", true};
    GeneratorParam<int> vector_multiple{"vector_multiple", 0};
    GeneratorParam<int> rows_per_block{"rows_per_block", 0};
    GeneratorParam<int> rows_per_task{"rows_per_task", 0};

    // The fused kernel's inputs, in its order, then the global sums and count.
    Input<Buffer<void, 3>> y_backprop{"y_backprop"};
    Input<Buffer<void, 3>> x{"x"};
    Input<Buffer<float, 1>> scale{"scale"};
    Input<Buffer<float, 1>> reserve_space_1{"reserve_space_1"};
    Input<Buffer<float, 1>> reserve_space_2{"reserve_space_2"};
    Input<float> epsilon{"epsilon"};
    Input<bool> rs2_is_inverse_std{"rs2_is_inverse_std"};
    Input<Buffer<float, 1>> sum_dy{"sum_dy"};
    Input<Buffer<float, 1>> sum_dyxc{"sum_dyxc"};
    Input<int64_t> count{"count"};

    Output<Buffer<void, 3>> x_backprop{"x_backprop"};
    Output<Buffer<float, 1>> scale_backprop{"scale_backprop"};
    Output<Buffer<float, 1>> offset_backprop{"offset_backprop"};

    void generate() {
        BnGradFuncs f;
        f.layout = layout;
        f.training = training;
        f.phase = fbng::Phase::Apply;

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
        in.count = count;
        in.sum_dy = sum_dy;
        in.sum_dyxc = sum_dyxc;
        in.out_type = x_backprop.type();

        Func xb = x_backprop, sb = scale_backprop, ob = offset_backprop;
        define_loads(f, in);
        define_given_sums(f, in);
        define_outputs(f, in, xb, sb, ob);

        Expr C = y_backprop.dim(channel_dim(f.layout)).extent();
        require_dense_from_zero(y_backprop);
        require_dense_from_zero(x);
        require_dense_from_zero(x_backprop);
        require_extents_of(x, y_backprop);
        require_extents_of(x_backprop, y_backprop);
        for (auto *b : {&scale, &reserve_space_1, &reserve_space_2, &sum_dy, &sum_dyxc}) require_channel_vector(*b, C);
        for (auto *b : {&scale_backprop, &offset_backprop}) require_channel_vector(*b, C);

        const Region r = tensor_estimate(f.layout), channels = channel_estimate();
        y_backprop.set_estimates(r);
        x.set_estimates(r);
        x_backprop.set_estimates(r);
        for (auto *b : {&scale, &reserve_space_1, &reserve_space_2, &sum_dy, &sum_dyxc}) b->set_estimates(channels);
        scale_backprop.set_estimates(channels);
        offset_backprop.set_estimates(channels);
        epsilon.set_estimate(0.0001f);
        rs2_is_inverse_std.set_estimate(false);
        count.set_estimate(32 * 56 * 56);

        BnGradOutputs out{xb, sb, ob};
        Knobs k;
        k.vector_multiple = vector_multiple;
        k.rows_per_block = rows_per_block;
        k.rows_per_task = rows_per_task;
        if (!using_autoscheduler()) schedule_for_target(f, out, get_target(), k);
    }
};

}  // namespace
}  // namespace fbng

HALIDE_REGISTER_GENERATOR(fbng::BatchNormGradReduce, batch_norm_grad_reduce)
HALIDE_REGISTER_GENERATOR(fbng::BatchNormGradApply, batch_norm_grad_apply)
