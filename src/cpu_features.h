// CPU feature detection, done once per process. Every dispatch decision reads
// this one place (XNNPACK's hardware-config pattern).
#pragma once

#include <string>
#include <vector>

namespace fbngrad {

// The ISA levels variants are built for, per platform, weakest first. The
// enumerators are the variant table's ISA names (cmake/variants.cmake); a
// build only knows its own platform's (platform_isas()).
enum class Isa {
    sse41, avx2, avx512,  // x86-64
    neon, arm_fp16,       // AArch64
    cuda,                 // not a CPU feature: "supported" means a CUDA device is usable
                          // (runtime/cuda_availability.h); never forced, never in platform_isas()
};

struct CpuFeatures {
    // x86-64
    bool sse41 = false;
    bool avx2 = false;  // with AVX, FMA and F16C: Halide's avx2 target assumes all four
    bool avx512 = false;  // the Skylake set: F, CD, BW, DQ, VL
    // AArch64 (the kernel's HWCAP bits)
    bool neon = false;      // FP + ASIMD: every AArch64 Linux CPU
    bool arm_fp16 = false;  // FPHP + ASIMDHP (ARMv8.2-A FP16): Halide's arm_fp16 target
    std::string describe() const;  // e.g. "sse41 avx2(avx,fma,f16c)" or "neon arm_fp16(fphp,asimdhp)"
};

const CpuFeatures &cpu_features();
bool cpu_has(Isa isa);
const char *isa_name(Isa isa);
// This platform's ISAs, weakest first, and the same as "a, b, c" for messages.
const std::vector<Isa> &platform_isas();
const std::string &platform_isa_names();
// Parses one of this platform's ISA names; false for anything else.
bool parse_isa(const std::string &name, Isa *out);

}  // namespace fbngrad
