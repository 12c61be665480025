// The kernels' tensor interface, shared by the fused generator and the
// split-phase generators: which buffer dim holds what, the constraints the
// API's views always satisfy (dense, starting at 0), and the shapes the
// autoschedulers tune for. One place, so that the three pipelines see the same
// constraints and so compile to the same loads.
#pragma once

#include "Halide.h"
#include "algorithm.h"

namespace fbng {

// Buffer dims of the 3-D view (algorithm.h): c and s, by layout; n is dim 2.
inline int channel_dim(Layout l) { return l == Layout::NHWC ? 0 : 1; }
inline int spatial_dim(Layout l) { return 1 - channel_dim(l); }

// The dispatcher passes dense tensors starting at 0; saying so lets Halide
// drop stride arithmetic and emit plain vector loads.
template <typename Tensor>
void require_dense_from_zero(Tensor &t) {
    t.dim(0).set_min(0).set_stride(1);
    for (int d = 1; d < 3; ++d) t.dim(d).set_min(0);
}

template <typename Tensor, typename Like>
void require_extents_of(Tensor &t, const Like &like) {
    for (int d = 0; d < 3; ++d) t.dim(d).set_extent(like.dim(d).extent());
}

// A float32 [C] vector (scale, the saved statistics, the per-channel outputs).
template <typename Vector>
void require_channel_vector(Vector &v, const Halide::Expr &C) {
    v.dim(0).set_min(0).set_extent(C).set_stride(1);
}

// A ResNet-50 stage (N=32, 56x56, C=64): what autoschedulers tune for.
constexpr int kEstimateChannels = 64;
inline Halide::Region tensor_estimate(Layout l) {
    const int C = kEstimateChannels, S_nhwc = 32 * 56 * 56, S_nchw = 56 * 56, N_nchw = 32;
    return l == Layout::NHWC ? Halide::Region{{0, C}, {0, S_nhwc}, {0, 1}}
                             : Halide::Region{{0, S_nchw}, {0, C}, {0, N_nchw}};
}
inline Halide::Region channel_estimate() { return {{0, kEstimateChannels}}; }

}  // namespace fbng
