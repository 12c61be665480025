// The edge shapes every variant is tested on (test_variants.cpp for the CPU
// variants, test_cuda.cpp for the CUDA ones): below, at and above the CPU
// vector widths (4, 8, 16 float lanes) and the schedules' tiles (x86 NHWC:
// 256-row sum blocks, 64-row tasks; CUDA: 32-channel warps, 512-row chunks,
// 4096-element plane chunks), a 5-D shape, and helpers to name them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fbngrad/fbngrad.h"

namespace fbngrad::test {

// Logical shapes as N, spatial dims..., C; in_layout() puts them in the layout's order.
inline const std::vector<std::vector<int64_t>> kEdgeShapes = {
    {1, 1, 1, 1},     // N*H*W = 1, C = 1
    {1, 1, 1, 17},    // one row, C just above 16 lanes
    {2, 3, 5, 3},     // odd H and W, C below every vector width
    {1, 7, 9, 16},    // C at the AVX-512 width
    {3, 5, 7, 17},    // C above it, M = 105
    {1, 17, 31, 4},   // M = 527 = 2*256 + 15 and 8*64 + 15 (also 512 + 15): tails of every row tile; C at SSE width
    {2, 16, 16, 64},  // M = 512: exactly two x86 sum blocks, one CUDA chunk; C = two warps
    {1, 1, 257, 8},   // M = 257: one past a block; C at AVX2 width
    {2, 2, 3, 2048},  // wide C, few rows
    {2, 3, 4, 5, 6},  // 5-D: N, D, H, W, C
    {1, 65, 65, 33},  // CUDA: a plane of 4225 = 4096 + 129 (NCHW chunk tail), 8 NHWC chunks + a tail; C = warp + 1
};

inline std::vector<int64_t> in_layout(const std::vector<int64_t> &nsc, fbngrad_layout layout) {
    if (layout == FBNGRAD_NHWC) return nsc;
    std::vector<int64_t> s = {nsc[0], nsc.back()};
    s.insert(s.end(), nsc.begin() + 1, nsc.end() - 1);
    return s;
}

// "2x3x4x5", for test names.
inline std::string shape_name(const std::vector<int64_t> &shape) {
    std::string s;
    for (int64_t d : shape) s += std::to_string(d) + "x";
    if (!s.empty()) s.pop_back();
    return s;
}

}  // namespace fbngrad::test
