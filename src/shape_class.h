// Shape classes: the coarse kinds of problem a tuned build may schedule
// differently (bench/tune/ measures a winner per class; cmake/variants.cmake
// builds one variant per distinct winner; the dispatcher picks by class).
// The tuner, the build and the dispatcher all classify with this one function.
#pragma once

#include <cstdint>
#include <cstring>

namespace fbngrad {

enum class ShapeClass : int { SmallC = 0, SmallRows = 1, CacheResident = 2, Dram = 3, Huge = 4, Plane = 5 };
// The CPU classes, which the tuner measures: SmallC to Huge.
constexpr int kShapeClassCount = 5;
// And the one CUDA class, Plane (classify_cuda_shape): a build-defined row
// (cmake/variants.cmake: the NCHW single pass), not a tuner's.
constexpr int kAllShapeClassCount = 6;

inline const char *shape_class_name(ShapeClass k) {
    switch (k) {
    case ShapeClass::SmallC: return "small_c";
    case ShapeClass::SmallRows: return "small_nhw";
    case ShapeClass::CacheResident: return "cache";
    case ShapeClass::Dram: return "dram";
    case ShapeClass::Huge: return "huge";
    case ShapeClass::Plane: return "plane";
    }
    return "?";
}

inline bool parse_shape_class(const char *s, ShapeClass *k) {
    for (int i = 0; i < kAllShapeClassCount; ++i)
        if (std::strcmp(s, shape_class_name(ShapeClass(i))) == 0) return (*k = ShapeClass(i)), true;
    return false;
}

// C channels, rows = N*H*W (elements per channel), bytes per element of the tensors.
//   small_c    C < 16: fewer channels than one AVX-512 float vector (NHWC's lanes)
//   small_nhw  rows < 4096: few elements per channel (ResNet's 7x7 stages at N = 32)
//   cache      the three tensors (dy, x, x_backprop) fit in 16 MiB (this kind of
//              machine's L2s plus half its L3: the second read hits the cache)
//   dram       up to 128 MiB: the tensors stream from memory, but what a pass
//              read last is a good part of what the next one reads first
//   huge       more than 128 MiB (4x this kind of machine's L3): nothing of one
//              pass is left in the cache for the next (ResNet-50's 112x112x64
//              and 56x56x256 at N = 32, where NHWC inference runs faster in one
//              pass: docs/tuning.md)
inline ShapeClass classify_shape(int64_t C, int64_t rows, int bytes_per_element) {
    if (C < 16) return ShapeClass::SmallC;
    if (rows < 4096) return ShapeClass::SmallRows;
    const double traffic = 3.0 * double(C) * double(rows) * bytes_per_element;
    if (traffic <= 16.0 * 1024 * 1024) return ShapeClass::CacheResident;
    return traffic <= 128.0 * 1024 * 1024 ? ShapeClass::Dram : ShapeClass::Huge;
}

// CUDA tensors: NCHW with at most kPlaneMaxElements elements a channel
// (N*H*W: the 7x7 to 28x28 planes at N = 32) are the Plane class, which the
// single-pass rows serve (fbng_<dtype>_nchw_<mode>_cuda_plane: one kernel,
// one block a channel, generators/schedule_cuda.cpp); every other shape gets
// the CPU classes, which no CUDA row serves. The bound is a first guess, to
// be measured on a GPU (docs/cuda.md): where one block a channel beats the
// three kernels.
constexpr int64_t kPlaneMaxElements = 32 * 28 * 28;
inline ShapeClass classify_cuda_shape(bool nchw, int64_t C, int64_t rows, int bytes_per_element) {
    if (nchw && rows <= kPlaneMaxElements) return ShapeClass::Plane;
    return classify_shape(C, rows, bytes_per_element);
}

}  // namespace fbngrad
