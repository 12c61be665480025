#include "two_pass_route.h"

#include <cstring>
#include <vector>

#include "fbngrad_split_phase_headers.h"
#include "kernel_args.h"
#include "task_size.h"

namespace fbngrad {
namespace {

// A named array with a last empty row, as split_phase_dispatch.cpp's tables
// (a build without the split phase, or an AArch64 one, has no routes).
const TwoPassRoute kRoutes[] = {
#define FBNGRAD_TWO_PASS_ROUTE(fused, reduce, apply) {#fused, #reduce, #apply, reduce, apply},
#include "fbngrad_two_pass_routes.inc"
#undef FBNGRAD_TWO_PASS_ROUTE
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

}  // namespace

const TwoPassRoute *find_two_pass_route(const char *fused) {
    for (const TwoPassRoute &r : kRoutes)
        if (r.fused && std::strcmp(r.fused, fused) == 0) return &r;
    return nullptr;
}

bool takes_two_passes(const runtime::CallContext &call, int64_t n, int64_t plane, int64_t elements) {
    return runtime::nchw_takes_two_passes(n, plane, elements,
                                          runtime::task_elements(&call, elements, runtime::kRuleTaskElements));
}

int run_two_passes(const TwoPassRoute &route, runtime::CallContext *call, int32_t C, int64_t count,
                   halide_buffer_t *dy, halide_buffer_t *x, halide_buffer_t *scale, halide_buffer_t *mean,
                   halide_buffer_t *rs2, float epsilon, bool rs2_is_inverse_std, halide_buffer_t *x_backprop,
                   halide_buffer_t *scale_backprop, halide_buffer_t *offset_backprop, const char **failed) {
    // The sums between the passes: from the call's arena (call_arena.h) where
    // it has room, as the kernels' own per-channel buffers, else the heap. The
    // reduce writes every one of them.
    const size_t bytes = 2 * size_t(C) * sizeof(float);
    std::vector<float> heap;
    float *sums = static_cast<float *>(call->scratch.allocate(bytes));
    if (!sums) {
        heap.resize(2 * size_t(C));
        sums = heap.data();
    }
    Tensor3 sum_dy(sums, C), sum_dyxc(sums + C, C);
    *failed = route.reduce_name;
    if (int rc = route.reduce(call, dy, x, mean, &sum_dy.buf, &sum_dyxc.buf)) return rc;
    *failed = route.apply_name;
    return route.apply(call, dy, x, scale, mean, rs2, epsilon, rs2_is_inverse_std, &sum_dy.buf, &sum_dyxc.buf, count,
                       x_backprop, scale_backprop, offset_backprop);
}

}  // namespace fbngrad
