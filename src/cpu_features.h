// CPU feature detection, done once per process. Every dispatch decision reads
// this one place (XNNPACK's hardware-config pattern).
#pragma once

#include <string>

namespace fbngrad {

// The ISA levels variants are built for, weakest first.
enum class Isa { sse41, avx2, avx512 };

struct CpuFeatures {
    bool sse41 = false;
    bool avx2 = false;  // with AVX, FMA and F16C: Halide's avx2 target assumes all four
    bool avx512 = false;  // the Skylake set: F, CD, BW, DQ, VL
    std::string describe() const;  // "sse41 avx2 avx512"
};

const CpuFeatures &cpu_features();
bool cpu_has(Isa isa);
const char *isa_name(Isa isa);
// Parses "sse41" / "avx2" / "avx512"; false for anything else.
bool parse_isa(const std::string &name, Isa *out);

}  // namespace fbngrad
