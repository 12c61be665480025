// The edge shapes every variant is tested on (test_variants.cpp for the CPU
// variants, test_cuda.cpp for the CUDA ones): below, at and above the CPU
// vector widths (4, 8, 16 float lanes) and the schedules' tiles (x86 NHWC:
// sum blocks of max(256, 65536 / C) rows, tasks of max(64, 16384 / C) rows;
// ARM NHWC: 256-row blocks, 64-row tasks; CUDA: 32-channel warps, 512-row chunks,
// 4096-element plane chunks, the NCHW single pass's groups of 8 planes; x86 and ARM NHWC sums specialized for C of 1 to 3 and
// of 1 to 4 vectors of 4, 8 or 16 lanes), a 5-D shape, and helpers to name them.
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
    {1, 17, 31, 4},   // M = 527 = 2*256 + 15 and 8*64 + 15 (also 512 + 15): tails of the ARM tiles and the CUDA chunk; C at SSE width
    {2, 16, 16, 64},  // M = 512: exactly two ARM sum blocks, two x86 tasks (C = 64: 256 rows), one CUDA chunk; C = two warps
    {1, 41, 25, 64},  // M = 1025: one past an x86 sum block at C = 64 (1024 rows), 4 tasks + 1 row
    {1, 64, 64, 16},  // M = 4096: exactly one x86 sum block at C = 16 (4096 rows), 4 tasks of 1024
    {1, 1, 257, 8},   // M = 257: one past an ARM block; C at AVX2 width
    {3, 9, 11, 2},    // x86 NHWC: C = 2, the sums' unrolled scalar rows (C below the narrowest vector)
    {2, 5, 13, 24},   // x86 NHWC: C = 3 AVX2 vectors, the sums' unrolled vectors of a row
    {2, 7, 5, 12},    // C = 3 SSE vectors (the unrolled sums on every x86 ISA)
    {1, 9, 40, 32},   // C = 2 AVX-512 vectors, 4 AVX2 ones (the unrolled sums' largest on AVX2)
    {1, 3, 100, 48},  // C = 3 AVX-512 vectors (the unrolled sums), 6 AVX2 ones (the general loop)
    {2, 2, 3, 2048},  // wide C, few rows
    {2, 3, 4, 5, 6},  // 5-D: N, D, H, W, C
    {1, 65, 65, 33},  // CUDA: a plane of 4225 = 4096 + 129 (NCHW chunk tail), 8 NHWC chunks + a tail; C = warp + 1;
                      // x86 (C = 33: 1985-row blocks, 496-row tasks): 2 blocks + 255 rows, 8 tasks + 257 rows
    {8, 4, 8, 5},     // CUDA NCHW single pass: N = 8, one group of planes summed at a time; S = 32, one warp
    {9, 5, 13, 3},    // CUDA NCHW single pass: N = 9, a group + 1 plane; S = 65, two warps + 1
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
