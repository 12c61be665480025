// The FusedBatchNormGradV2 generator: declares the kernel's interface, builds
// the algorithm (algorithm.cpp) and hands it to the schedule for the target.
// The tensor dtypes come from the build as y_backprop.type / x.type /
// x_backprop.type params (float32, float16, or uint16 holding bfloat16 bits).
#include "Halide.h"
#include "algorithm.h"
#include "schedule.h"

using namespace Halide;

namespace fbng {
namespace {

class FusedBatchNormGrad : public Generator<FusedBatchNormGrad> {
public:
    GeneratorParam<Layout> layout{"layout", Layout::NHWC, {{"nhwc", Layout::NHWC}, {"nchw", Layout::NCHW}}};
    GeneratorParam<bool> training{"training", true};
    GeneratorParam<int> vector_multiple{"vector_multiple", 0};
    GeneratorParam<int> rows_per_block{"rows_per_block", 0};
    GeneratorParam<int> rows_per_task{"rows_per_task", 0};

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

    void generate() {
        BnGradFuncs f;
        f.layout = layout;
        f.training = training;

        const int c_dim = (f.layout == Layout::NHWC) ? 0 : 1;
        const int s_dim = 1 - c_dim;
        BnGradInputs in;
        in.y_backprop = y_backprop;
        in.x = x;
        in.scale = scale;
        in.mean = reserve_space_1;
        in.reserve_space_2 = reserve_space_2;
        in.epsilon = epsilon;
        in.rs2_is_inverse_std = rs2_is_inverse_std;
        in.S = y_backprop.dim(s_dim).extent();
        in.N = y_backprop.dim(2).extent();
        in.out_type = x_backprop.type();

        Func xb = x_backprop, sb = scale_backprop, ob = offset_backprop;
        define_algorithm(f, in, xb, sb, ob);

        // The dispatcher passes dense tensors starting at 0; saying so lets
        // Halide drop stride arithmetic and emit plain vector loads.
        Expr C = y_backprop.dim(c_dim).extent();
        for (auto *b : {&y_backprop, &x}) {
            b->dim(0).set_min(0).set_stride(1);
            for (int d = 1; d < 3; ++d) b->dim(d).set_min(0);
        }
        for (int d = 0; d < 3; ++d) {
            x.dim(d).set_extent(y_backprop.dim(d).extent());
            x_backprop.dim(d).set_min(0).set_extent(y_backprop.dim(d).extent());
        }
        x_backprop.dim(0).set_stride(1);
        for (auto *b : {&scale, &reserve_space_1, &reserve_space_2}) b->dim(0).set_min(0).set_extent(C).set_stride(1);
        for (auto *b : {&scale_backprop, &offset_backprop}) b->dim(0).set_min(0).set_extent(C).set_stride(1);

        set_estimates(f.layout);

        BnGradOutputs out{xb, sb, ob};
        Knobs k;
        k.vector_multiple = vector_multiple;
        k.rows_per_block = rows_per_block;
        k.rows_per_task = rows_per_task;
        if (!using_autoscheduler()) {
            if (get_target().arch == Target::X86) {
                schedule_x86(f, out, get_target(), k);
            } else {
                throw CompileError("fbngrad has no schedule for target " + get_target().to_string());
            }
        }
    }

private:
    // A ResNet-50 stage (N=32, 56x56, C=64): what autoschedulers tune for.
    void set_estimates(Layout l) {
        const int C = 64, S_nhwc = 32 * 56 * 56, S_nchw = 56 * 56, N_nchw = 32;
        Region r = (l == Layout::NHWC) ? Region{{0, C}, {0, S_nhwc}, {0, 1}}
                                       : Region{{0, S_nchw}, {0, C}, {0, N_nchw}};
        y_backprop.set_estimates(r);
        x.set_estimates(r);
        x_backprop.set_estimates(r);
        for (auto *b : {&scale, &reserve_space_1, &reserve_space_2}) b->set_estimates({{0, C}});
        scale_backprop.set_estimates({{0, C}});
        offset_backprop.set_estimates({{0, C}});
        epsilon.set_estimate(0.0001f);
        rs2_is_inverse_std.set_estimate(false);
    }
};

}  // namespace
}  // namespace fbng

HALIDE_REGISTER_GENERATOR(fbng::FusedBatchNormGrad, fused_batch_norm_grad)
