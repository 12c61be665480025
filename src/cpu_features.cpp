#include "cpu_features.h"

#include "cuda_availability.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>  // __get_cpuid, bit_F16C
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>  // getauxval; on aarch64 it brings in the HWCAP_* bits
#endif

namespace fbngrad {
#if defined(__x86_64__) || defined(__i386__)
namespace {
// CPUID leaf 1, ECX bit 29. Not __builtin_cpu_supports("f16c"): Clang 14 (Debian 12's,
// used by the sanitizer and fuzzing build) rejects that name at compile time.
// F16C uses the AVX register state, whose OS support the "avx" check covers.
bool has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
}  // namespace
#endif

std::string CpuFeatures::describe() const {
    std::string s;
    auto add = [&](bool has, const char *name) {
        if (!has) return;
        if (!s.empty()) s += ' ';
        s += name;
    };
#if defined(__aarch64__)
    add(neon, "neon");
    add(arm_fp16, "arm_fp16(fphp,asimdhp)");
    return s.empty() ? "aarch64 without NEON" : s;
#else
    add(sse41, "sse41");
    add(avx2, "avx2(avx,fma,f16c)");
    add(avx512, "avx512_skylake(f,cd,bw,dq,vl)");
    return s.empty() ? "x86-64 baseline" : s;
#endif
}

const CpuFeatures &cpu_features() {
    static const CpuFeatures f = [] {
        CpuFeatures r;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        r.sse41 = __builtin_cpu_supports("sse4.1");
        r.avx2 = r.sse41 && __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") &&
                 __builtin_cpu_supports("fma") && has_f16c();
        r.avx512 = r.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                   __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                   __builtin_cpu_supports("avx512vl");
#elif defined(__aarch64__) && defined(__linux__)
        // The kernel's view of the CPU (and, under qemu-user, the emulated
        // -cpu model's). Halide 21's arm_fp16 code needs both half-precision
        // bits: scalar (FPHP) and vector (ASIMDHP) FP16 arithmetic.
        const unsigned long hw = getauxval(AT_HWCAP);
        r.neon = (hw & HWCAP_FP) && (hw & HWCAP_ASIMD);
        r.arm_fp16 = r.neon && (hw & HWCAP_FPHP) && (hw & HWCAP_ASIMDHP);
#endif
        return r;
    }();
    return f;
}

bool cpu_has(Isa isa) {
    const CpuFeatures &f = cpu_features();
    switch (isa) {
    case Isa::sse41: return f.sse41;
    case Isa::avx2: return f.avx2;
    case Isa::avx512: return f.avx512;
    case Isa::neon: return f.neon;
    case Isa::arm_fp16: return f.arm_fp16;
    case Isa::cuda: return runtime::cuda_available();
    }
    return false;
}

const char *isa_name(Isa isa) {
    switch (isa) {
    case Isa::sse41: return "sse41";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::neon: return "neon";
    case Isa::arm_fp16: return "arm_fp16";
    case Isa::cuda: return "cuda";
    }
    return "?";
}

const std::vector<Isa> &platform_isas() {
#if defined(__aarch64__)
    static const std::vector<Isa> isas = {Isa::neon, Isa::arm_fp16};
#else
    static const std::vector<Isa> isas = {Isa::sse41, Isa::avx2, Isa::avx512};
#endif
    return isas;
}

const std::string &platform_isa_names() {
    static const std::string names = [] {
        std::string s;
        for (Isa i : platform_isas()) s += (s.empty() ? "" : ", ") + std::string(isa_name(i));
        return s;
    }();
    return names;
}

bool parse_isa(const std::string &name, Isa *out) {
    for (Isa i : platform_isas())
        if (name == isa_name(i)) {
            *out = i;
            return true;
        }
    return false;
}

}  // namespace fbngrad
