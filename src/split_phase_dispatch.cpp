#include "split_phase_dispatch.h"

#include <vector>

#include "fbngrad_split_phase_headers.h"
#include "left_out.h"

namespace fbngrad {
namespace {

// Named arrays, not initializer lists: GCC puts an initializer list's array
// in the object's one .data section, which -fdata-sections does not split,
// so a program that never calls the split phase could not drop its kernels
// (-Wl,--gc-sections; docs/edge-builds.md). A last empty row keeps the arrays
// valid where the build has no split phase (FBNGRAD_SPLIT_PHASE=OFF).
const ReduceVariant kReduceVariants[] = {
#define FBNGRAD_REDUCE_VARIANT(name, dtype, layout, isa, device) {#name, dtype, layout, Isa::isa, device, name},
#include "fbngrad_reduce_variants.inc"
#undef FBNGRAD_REDUCE_VARIANT
    {nullptr, FBNGRAD_FLOAT32, FBNGRAD_NHWC, Isa::cuda, FBNGRAD_CPU, nullptr}};

const ApplyVariant kApplyVariants[] = {
#define FBNGRAD_APPLY_VARIANT(name, dtype, layout, training, isa, device) \
    {#name, dtype, layout, training != 0, Isa::isa, device, name},
#include "fbngrad_apply_variants.inc"
#undef FBNGRAD_APPLY_VARIANT
    {nullptr, FBNGRAD_FLOAT32, FBNGRAD_NHWC, false, Isa::cuda, FBNGRAD_CPU, nullptr}};

template <class T, size_t n>
struct Rows {
    const T (&rows)[n];
    const T *begin() const { return rows; }
    const T *end() const { return rows + n - 1; }  // without the empty last row
    bool empty() const { return n == 1; }
};
template <class T, size_t n>
Rows<T, n> rows_of(const T (&rows)[n]) {
    return Rows<T, n>{rows};
}

auto reduce_table() { return rows_of(kReduceVariants); }
auto apply_table() { return rows_of(kApplyVariants); }

std::string missing(const char *phase, const Variant &fused) {
    return std::string("no split-phase ") + phase + " variant was compiled for the ISA of " + fused.info.name;
}

// False, with the reason, where this build left the split phase out
// (FBNGRAD_SPLIT_PHASE=OFF); *code is then FBNGRAD_UNIMPLEMENTED.
bool split_phase_built(bool built, std::string *why, fbngrad_code *code) {
    *code = built ? FBNGRAD_NOT_FOUND : FBNGRAD_UNIMPLEMENTED;
    if (!built) *why = split_phase_left_out();
    return built;
}

}  // namespace

const ReduceVariant *select_reduce_variant(fbngrad_dtype dtype, fbngrad_layout layout, fbngrad_device device,
                                           std::string *why, fbngrad_code *why_code) {
    if (!split_phase_built(!reduce_table().empty(), why, why_code)) return nullptr;
    // The sums are the same in both modes; the training variant's ISA it is,
    // or the inference one's where training was left out (FBNGRAD_MODES).
    const Variant *fused = select_variant(dtype, layout, true, device, why, nullptr, why_code);
    if (!fused && *why_code == FBNGRAD_UNIMPLEMENTED)
        fused = select_variant(dtype, layout, false, device, why, nullptr, why_code);
    if (!fused) return nullptr;
    for (const ReduceVariant &v : reduce_table())
        if (v.dtype == dtype && v.layout == layout && v.device == device && v.isa == fused->isa) return &v;
    *why = missing("reduce", *fused);
    return nullptr;
}

const ApplyVariant *select_apply_variant(fbngrad_dtype dtype, fbngrad_layout layout, bool is_training,
                                         fbngrad_device device, std::string *why, fbngrad_code *why_code) {
    if (!split_phase_built(!apply_table().empty(), why, why_code)) return nullptr;
    const Variant *fused = select_variant(dtype, layout, is_training, device, why, nullptr, why_code);
    if (!fused) return nullptr;
    for (const ApplyVariant &v : apply_table())
        if (v.dtype == dtype && v.layout == layout && v.is_training == is_training && v.device == device &&
            v.isa == fused->isa)
            return &v;
    *why = missing("apply", *fused);
    return nullptr;
}

}  // namespace fbngrad
