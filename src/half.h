// Host-side conversions between float and the 16-bit tensor types, with
// round-to-nearest-even and NaN kept a (quiet) NaN: the same rounding as the
// kernels' store (generators/dtype.h). Used by the CLI, the tests and the bench.
#pragma once

#include <cstdint>
#include <cstring>

namespace fbngrad {

inline uint32_t float_bits(float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return b;
}
inline float bits_float(uint32_t b) {
    float f;
    std::memcpy(&f, &b, 4);
    return f;
}

inline float bf16_to_float(uint16_t h) { return bits_float(uint32_t(h) << 16); }

inline uint16_t float_to_bf16(float f) {
    uint32_t b = float_bits(f);
    if ((b & 0x7fffffffu) > 0x7f800000u) return uint16_t((b >> 16) | 0x0040u);
    return uint16_t((b + 0x7fffu + ((b >> 16) & 1u)) >> 16);
}

inline float f16_to_float(uint16_t h) {
    uint32_t sign = uint32_t(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return bits_float(sign | 0x7f800000u | (man << 13));  // Inf / NaN
    if (exp == 0) {
        if (man == 0) return bits_float(sign);
        // Subnormal: value = man * 2^-24, exact in float.
        float v = float(man) * (1.0f / 16777216.0f);
        return sign ? -v : v;
    }
    return bits_float(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t float_to_f16(float f) {
    uint32_t b = float_bits(f);
    uint16_t sign = uint16_t((b >> 16) & 0x8000u);
    uint32_t a = b & 0x7fffffffu;
    if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // quiet NaN
    if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to >= 65520: Inf
    if (a < 0x38800000u) {
        // Result is subnormal or zero: round a * 2^24 to an integer, ties to even.
        float v = bits_float(a) * 16777216.0f;  // exact scaling by a power of two
        uint32_t i = uint32_t(v);
        float rem = v - float(i);
        if (rem > 0.5f || (rem == 0.5f && (i & 1u))) ++i;
        return uint16_t(sign | i);  // i == 0x400 becomes the smallest normal, correctly
    }
    uint32_t exp = (a >> 23) - 112;
    uint32_t man = a & 0x7fffffu;
    uint32_t h = (exp << 10) | (man >> 13);
    uint32_t rest = man & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // may carry into the exponent: correct
    return uint16_t(sign | h);
}

}  // namespace fbngrad
