// What a selective build left out of the variant table, told from the table
// itself (the options of cmake/variants.cmake, docs/edge-builds.md): a row of
// dtype x layout x mode x device that no compiled variant has was left out of
// this build (FBNGRAD_UNIMPLEMENTED, naming the option that builds it), while a
// row that has variants none of which this CPU can run is "not found here"
// (FBNGRAD_NOT_FOUND). Header-only and free of the dispatcher's state, so that
// tests/test_left_out.cpp can hold it to made-up tables.
#pragma once

#include <string>
#include <vector>

#include "fbngrad/fbngrad.h"

namespace fbngrad {

namespace left_out_detail {

// The values of the options, in their own order (the table's), as the CMake
// options take them and the CLI prints them.
constexpr const char *kDtypes[] = {"float32", "float16", "bfloat16"};
constexpr const char *kLayouts[] = {"NHWC", "NCHW"};
constexpr const char *kModes[] = {"training", "inference"};
inline int dtype_index(fbngrad_dtype d) { return d == FBNGRAD_FLOAT32 ? 0 : d == FBNGRAD_FLOAT16 ? 1 : 2; }
inline int layout_index(fbngrad_layout l) { return l == FBNGRAD_NHWC ? 0 : 1; }
inline int mode_index(bool training) { return training ? 0 : 1; }

// "a;b": the values whose bit is set in `mask`.
inline std::string names(const char *const *all, int n, unsigned mask, const char *sep = ";") {
    std::string s;
    for (int i = 0; i < n; ++i)
        if (mask >> i & 1u) s += (s.empty() ? "" : sep) + std::string(all[i]);
    return s;
}

inline std::string join(const std::vector<std::string> &v, const char *sep) {
    std::string s;
    for (const std::string &e : v) s += (s.empty() ? "" : sep) + e;
    return s;
}

}  // namespace left_out_detail

// "" when `rows` (the fused variants of the build, hand-scheduled and tuned)
// have one of (dtype, layout, mode, device); otherwise the message for the
// caller: what was left out, the options as built, and how to build it.
inline std::string left_out(const std::vector<fbngrad_variant_info> &rows, fbngrad_dtype dtype,
                            fbngrad_layout layout, bool training, fbngrad_device device) {
    using namespace left_out_detail;
    unsigned dtypes = 0, layouts = 0, modes = 0;  // what this device's rows have
    for (const fbngrad_variant_info &r : rows) {
        if (r.device != device) continue;
        if (r.dtype == dtype && r.layout == layout && (r.is_training != 0) == training) return "";
        dtypes |= 1u << dtype_index(r.dtype);
        layouts |= 1u << layout_index(r.layout);
        modes |= 1u << mode_index(r.is_training != 0);
    }
    if (!dtypes)
        return device == FBNGRAD_CUDA ? "the CUDA variants were left out of this build of fbngrad "
                                        "(FBNGRAD_ENABLE_CUDA=OFF); configure it with -DFBNGRAD_ENABLE_CUDA=ON to "
                                        "build them"
                                      : "this build of fbngrad has no variant for this device";
    std::string what, built, fix;
    int n = 0;
    auto clause = [&](const char *option, const char *const *all, int count, unsigned have, int want) {
        if (have >> want & 1u) return;
        what += (n++ ? " and " : "") + std::string(all[want]);
        built += (built.empty() ? "" : ", ") + std::string(option) + "=" + names(all, count, have);
        fix += " -D" + std::string(option) + "=\"" + names(all, count, have | 1u << want) + "\"";
    };
    clause("FBNGRAD_DTYPES", kDtypes, 3, dtypes, dtype_index(dtype));
    clause("FBNGRAD_LAYOUTS", kLayouts, 2, layouts, layout_index(layout));
    clause("FBNGRAD_MODES", kModes, 2, modes, mode_index(training));
    if (!n)  // each value built, not together (the table is a product: never so far)
        return std::string("the ") + kDtypes[dtype_index(dtype)] + " " + kLayouts[layout_index(layout)] + " " +
               kModes[mode_index(training)] + " variants were left out of this build of fbngrad";
    return what + (n > 1 ? " were" : " was") + " left out of this build of fbngrad (" + built +
           "); configure it with" + fix + " to build " + (n > 1 ? "them" : "it");
}

// The split phase, built or not (FBNGRAD_SPLIT_PHASE).
inline const char *split_phase_left_out() {
    return "the split phase was left out of this build of fbngrad (FBNGRAD_SPLIT_PHASE=OFF); configure it with "
           "-DFBNGRAD_SPLIT_PHASE=ON to build it";
}

// An ISA of this platform that the build left out (FBNGRAD_ISAS), as
// fbngrad_force_isa and FBNGRAD_ISA report it; `built`: the ISAs it has.
inline std::string isa_left_out(const std::string &isa, const std::vector<std::string> &built) {
    return isa + " was left out of this build of fbngrad (FBNGRAD_ISAS=" + left_out_detail::join(built, ";") +
           "); configure it with -DFBNGRAD_ISAS=all (or a list with " + isa + ") to build its variants";
}

}  // namespace fbngrad
