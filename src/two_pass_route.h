// The x86 NCHW one pass's second route. The one pass (generators/schedule_x86.cpp)
// computes a channel's sums and its x_backprop in the same task, which saves
// two tensor-sizes of memory traffic, so a task holds every sample of at
// least one channel and a call offers at most C tasks: 64 on ResNet's
// 32x112x112x64, where the many-core rule asks for 256. Where one channel's
// planes (N*H*W elements) exceed a task of the call's size (the rule's on a
// caller's runner; on fbngrad's own pool of P threads, one of 4 per thread:
// runtime/parallel_runtime.h, task_elements), or where a task's run of its
// channels in each sample would be short (small tasks of many samples: up to
// 2.3x slower than two passes), the call runs as the split phase on one
// worker instead: reduce, then apply, whose loops meet the rule.
// Both sum each plane in the same vector lanes and the planes in the same
// order (the route exists only for rows of the split phase's vector width:
// cmake/split_phase_variants.cmake), so the bits do not depend on the route,
// nor therefore on the runner or the thread count.
#pragma once

#include <cstdint>

#include "fbngrad/fbngrad.h"
#include "halide_glue.h"
#include "split_phase_dispatch.h"

namespace fbngrad {

struct TwoPassRoute {
    const char *fused;  // the one-pass variant it replaces
    const char *reduce_name, *apply_name;
    ReduceFn reduce;
    ApplyFn apply;
};

// The route of the variant named `fused`, or nullptr (dispatch.cpp asks once a variant).
const TwoPassRoute *find_two_pass_route(const char *fused);

// Whether a call of `n` samples, `plane` (H*W) elements a channel's plane and
// `elements` in all takes the route (runtime/task_size.h: nchw_takes_two_passes).
bool takes_two_passes(const runtime::CallContext &call, int64_t n, int64_t plane, int64_t elements);

// The call as reduce then apply, with the sums of all `C` channels between
// them; 0 or the failing kernel's result, whose name is then in *failed.
int run_two_passes(const TwoPassRoute &route, runtime::CallContext *call, int32_t C, int64_t count,
                   halide_buffer_t *dy, halide_buffer_t *x, halide_buffer_t *scale, halide_buffer_t *mean,
                   halide_buffer_t *rs2, float epsilon, bool rs2_is_inverse_std, halide_buffer_t *x_backprop,
                   halide_buffer_t *scale_backprop, halide_buffer_t *offset_backprop, const char **failed);

}  // namespace fbngrad
