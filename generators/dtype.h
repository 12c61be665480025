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
    if (t == Float(16)) {
        // Halide's conversion rounds to nearest even. Where the target has no
        // native conversion (x86 without F16C: sse41; AArch64 without FP16:
        // neon), Halide 21 emulates it with integer ops that test for
        // "too big" before "NaN" (src/EmulateFloat16Math.cpp), turning every
        // NaN into infinity. So NaN is mapped here, as the hardware does: the
        // sign and the top 10 payload bits kept, the quiet bit set. Native
        // and emulated variants then give the same bits.
        Expr b = reinterpret<uint32_t>(v);
        Expr nan16 = cast<uint16_t>(((b >> 16) & 0x8000) | 0x7e00 | ((b >> 13) & 0x03ff));
        // (The choice is made on the bits: a float16 select could itself be emulated.)
        Expr h = reinterpret<uint16_t>(cast(t, v));
        return reinterpret(Float(16), select((b & 0x7fffffff) > 0x7f800000, nan16, h));
    }
    return cast(t, v);
}

}  // namespace fbng
