// Shape classes: the coarse kinds of problem a tuned build may schedule
// differently (bench/tune/ measures a winner per class; cmake/variants.cmake
// builds one variant per distinct winner; the dispatcher picks by class).
// The tuner, the build and the dispatcher all classify with this one function.
#pragma once

#include <cstdint>
#include <cstring>

namespace fbngrad {

enum class ShapeClass : int { SmallC = 0, SmallRows = 1, CacheResident = 2, Dram = 3, Huge = 4 };
constexpr int kShapeClassCount = 5;

inline const char *shape_class_name(ShapeClass k) {
    switch (k) {
    case ShapeClass::SmallC: return "small_c";
    case ShapeClass::SmallRows: return "small_nhw";
    case ShapeClass::CacheResident: return "cache";
    case ShapeClass::Dram: return "dram";
    case ShapeClass::Huge: return "huge";
    }
    return "?";
}

inline bool parse_shape_class(const char *s, ShapeClass *k) {
    for (int i = 0; i < kShapeClassCount; ++i)
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
//              pass: README "Tuning for your machine")
inline ShapeClass classify_shape(int64_t C, int64_t rows, int bytes_per_element) {
    if (C < 16) return ShapeClass::SmallC;
    if (rows < 4096) return ShapeClass::SmallRows;
    const double traffic = 3.0 * double(C) * double(rows) * bytes_per_element;
    if (traffic <= 16.0 * 1024 * 1024) return ShapeClass::CacheResident;
    return traffic <= 128.0 * 1024 * 1024 ? ShapeClass::Dram : ShapeClass::Huge;
}

}  // namespace fbngrad
