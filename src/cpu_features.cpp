#include "cpu_features.h"

namespace fbngrad {

std::string CpuFeatures::describe() const {
    std::string s;
    auto add = [&](bool has, const char *name) {
        if (!has) return;
        if (!s.empty()) s += ' ';
        s += name;
    };
    add(sse41, "sse41");
    add(avx2, "avx2(avx,fma,f16c)");
    add(avx512, "avx512_skylake(f,cd,bw,dq,vl)");
    return s.empty() ? "x86-64 baseline" : s;
}

const CpuFeatures &cpu_features() {
    static const CpuFeatures f = [] {
        CpuFeatures r;
#if defined(__x86_64__) || defined(__i386__)
        __builtin_cpu_init();
        r.sse41 = __builtin_cpu_supports("sse4.1");
        r.avx2 = r.sse41 && __builtin_cpu_supports("avx") && __builtin_cpu_supports("avx2") &&
                 __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
        r.avx512 = r.avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
                   __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
                   __builtin_cpu_supports("avx512vl");
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
    }
    return false;
}

const char *isa_name(Isa isa) {
    switch (isa) {
    case Isa::sse41: return "sse41";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    }
    return "?";
}

bool parse_isa(const std::string &name, Isa *out) {
    for (Isa i : {Isa::sse41, Isa::avx2, Isa::avx512})
        if (name == isa_name(i)) {
            *out = i;
            return true;
        }
    return false;
}

}  // namespace fbngrad
