// Conversions between the tensor element types and float32.
//
// bfloat16 tensors are declared as uint16 holding the raw bits, and converted
// with integer ops here: one code path that compiles for every backend
// (Halide 14 could not compile bfloat16 for CUDA, pitfall P9) and whose
// rounding we control (round-to-nearest-even; NaN stays a quiet NaN).
#pragma once

#include "Halide.h"

namespace fbng {

inline Halide::Expr load_as_f32(Halide::Expr v) {
    using namespace Halide;
    if (v.type() == UInt(16)) return reinterpret<float>(cast<uint32_t>(v) << 16);
    return cast<float>(v);
}

inline Halide::Expr store_from_f32(Halide::Expr v, Halide::Type t) {
    using namespace Halide;
    if (t == UInt(16)) {
        Expr b = reinterpret<uint32_t>(v);
        Expr is_nan = (b & 0x7fffffff) > 0x7f800000;
        Expr rounded = (b + 0x7fff + ((b >> 16) & 1)) >> 16;
        return cast<uint16_t>(select(is_nan, (b >> 16) | 0x0040, rounded));
    }
    return cast(t, v);  // float16: Halide's conversion rounds to nearest even
}

}  // namespace fbng
