#include "split_phase_dispatch.h"

#include <vector>

#include "fbngrad_split_phase_headers.h"

namespace fbngrad {
namespace {

const std::vector<ReduceVariant> &reduce_table() {
    static const std::vector<ReduceVariant> t = {
#define FBNGRAD_REDUCE_VARIANT(name, dtype, layout, isa, device) {#name, dtype, layout, Isa::isa, device, name},
#include "fbngrad_reduce_variants.inc"
#undef FBNGRAD_REDUCE_VARIANT
    };
    return t;
}

const std::vector<ApplyVariant> &apply_table() {
    static const std::vector<ApplyVariant> t = {
#define FBNGRAD_APPLY_VARIANT(name, dtype, layout, training, isa, device) \
    {#name, dtype, layout, training != 0, Isa::isa, device, name},
#include "fbngrad_apply_variants.inc"
#undef FBNGRAD_APPLY_VARIANT
    };
    return t;
}

std::string missing(const char *phase, const Variant &fused) {
    return std::string("no split-phase ") + phase + " variant was compiled for the ISA of " + fused.info.name;
}

}  // namespace

const ReduceVariant *select_reduce_variant(fbngrad_dtype dtype, fbngrad_layout layout, fbngrad_device device,
                                           std::string *why) {
    // The sums are the same in both modes; the training variant's ISA it is.
    const Variant *fused = select_variant(dtype, layout, true, device, why);
    if (!fused) return nullptr;
    for (const ReduceVariant &v : reduce_table())
        if (v.dtype == dtype && v.layout == layout && v.device == device && v.isa == fused->isa) return &v;
    *why = missing("reduce", *fused);
    return nullptr;
}

const ApplyVariant *select_apply_variant(fbngrad_dtype dtype, fbngrad_layout layout, bool is_training,
                                         fbngrad_device device, std::string *why) {
    const Variant *fused = select_variant(dtype, layout, is_training, device, why);
    if (!fused) return nullptr;
    for (const ApplyVariant &v : apply_table())
        if (v.dtype == dtype && v.layout == layout && v.is_training == is_training && v.device == device &&
            v.isa == fused->isa)
            return &v;
    *why = missing("apply", *fused);
    return nullptr;
}

}  // namespace fbngrad
