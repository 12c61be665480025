// `fbngrad info`: the version, the CPU features, the forced ISA, the compiled
// variants (the fused op's and the split phase's) and which one each dtype x
// layout x mode would use here.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "common.h"
#include "fbngrad/fbngrad.h"

namespace fbngrad::cli {
namespace {

constexpr fbngrad_dtype kDtypes[] = {FBNGRAD_FLOAT32, FBNGRAD_FLOAT16, FBNGRAD_BFLOAT16};
constexpr fbngrad_layout kLayouts[] = {FBNGRAD_NHWC, FBNGRAD_NCHW};
constexpr int32_t kModes[] = {1, 0};
constexpr fbngrad_device kDevices[] = {FBNGRAD_CPU, FBNGRAD_CUDA};

// FBNGRAD_ISA as set in the environment (the library reads it; a value it
// rejected leaves dispatch automatic and makes every op call fail).
std::string env_isa() {
    const char *e = std::getenv("FBNGRAD_ISA");
    return e ? e : "";
}

// The split-phase variants, from the build's variant table (the public API
// lists the fused ones only). reduce has no mode: mode is then -1.
struct SplitVariant {
    const char *phase, *name;
    fbngrad_dtype dtype;
    fbngrad_layout layout;
    int32_t mode;
    const char *isa;
    fbngrad_device device;
};

const std::vector<SplitVariant> &split_variants() {
    static const std::vector<SplitVariant> v = {
#define FBNGRAD_REDUCE_VARIANT(name, dtype, layout, isa, device) {"reduce", #name, dtype, layout, -1, #isa, device},
#include "fbngrad_reduce_variants.inc"
#undef FBNGRAD_REDUCE_VARIANT
#define FBNGRAD_APPLY_VARIANT(name, dtype, layout, training, isa, device) \
    {"apply", #name, dtype, layout, training, #isa, device},
#include "fbngrad_apply_variants.inc"
#undef FBNGRAD_APPLY_VARIANT
    };
    return v;
}

std::string selected(fbngrad_dtype t, fbngrad_layout l, int32_t training, fbngrad_device d) {
    const fbngrad_variant_info *v = fbngrad_selected_variant(t, l, training, d);
    return v ? v->name : "";
}

// Whether the build has variants of the row at all (a selective build leaves
// rows out: docs/edge-builds.md); a row it has may still not run here.
bool built(fbngrad_dtype t, fbngrad_layout l, int32_t training, fbngrad_device d) {
    for (int32_t i = 0; i < fbngrad_variant_count(); ++i) {
        const fbngrad_variant_info *v = fbngrad_variant(i);
        if (v && v->dtype == t && v->layout == l && (v->is_training != 0) == (training != 0) && v->device == d)
            return true;
    }
    return false;
}

// What `info` shows where nothing is selected.
std::string none_here(fbngrad_dtype t, fbngrad_layout l, int32_t training, fbngrad_device d) {
    return built(t, l, training, d) ? "(none)" : "(not built)";
}

int info_json() {
    nlohmann::ordered_json j;
    j["version"] = fbngrad_version();
    j["cpu_features"] = fbngrad_cpu_features();
    j["cuda_available"] = fbngrad_cuda_available() != 0;
    j["cuda_unavailable_reason"] = fbngrad_cuda_unavailable_reason();
    j["forced_isa"] = fbngrad_forced_isa();
    j["FBNGRAD_ISA"] = env_isa();
    nlohmann::ordered_json variants = nlohmann::ordered_json::array();
    for (int32_t i = 0; i < fbngrad_variant_count(); ++i) {
        const fbngrad_variant_info *v = fbngrad_variant(i);
        if (!v) continue;
        variants.push_back({{"name", v->name},
                            {"dtype", dtype_name(v->dtype)},
                            {"layout", layout_name(v->layout)},
                            {"mode", mode_name(v->is_training)},
                            {"isa", v->isa},
                            {"device", device_name(v->device)},
                            {"supported", v->supported != 0},
                            {"shape_classes", v->shape_classes}});
    }
    j["variants"] = variants;
    nlohmann::ordered_json split = nlohmann::ordered_json::array();
    for (const SplitVariant &v : split_variants()) {
        using J = nlohmann::ordered_json;
        split.push_back({{"name", v.name},
                         {"phase", v.phase},
                         {"dtype", dtype_name(v.dtype)},
                         {"layout", layout_name(v.layout)},
                         {"mode", v.mode < 0 ? J(nullptr) : J(mode_name(v.mode))},
                         {"isa", v.isa},
                         {"device", device_name(v.device)}});
    }
    j["split_phase_variants"] = split;
    nlohmann::ordered_json sel = nlohmann::ordered_json::array();
    for (fbngrad_dtype t : kDtypes)
        for (fbngrad_layout l : kLayouts)
            for (int32_t m : kModes) {
                nlohmann::ordered_json row = {{"dtype", dtype_name(t)}, {"layout", layout_name(l)}, {"mode", mode_name(m)}};
                for (fbngrad_device d : kDevices) {
                    std::string name = selected(t, l, m, d);
                    row[device_name(d)] = name.empty() ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(name);
                }
                row["built"] = built(t, l, m, FBNGRAD_CPU);
                sel.push_back(row);
            }
    j["selected"] = sel;
    fmt::print("{}\n", j.dump(2));
    return kExitOk;
}

int info_text() {
    fmt::print("fbngrad {}\n", fbngrad_version());
    fmt::print("cpu features: {}\n", fbngrad_cpu_features());
    if (fbngrad_cuda_available())
        fmt::print("cuda:         a device is available\n");
    else
        fmt::print("cuda:         not available ({})\n", fbngrad_cuda_unavailable_reason());
    const std::string forced = fbngrad_forced_isa();
    const std::string env = env_isa();
    if (!forced.empty())
        fmt::print("forced isa:   {}\n", forced);
    else if (!env.empty())
        fmt::print("forced isa:   none; FBNGRAD_ISA={} was not accepted, so every op call fails\n", env);
    else
        fmt::print("forced isa:   none (automatic; set FBNGRAD_ISA to force one)\n");

    const int32_t n = fbngrad_variant_count();
    fmt::print("\ncompiled variants ({}, in dispatch priority order):\n", n);
    fmt::print("  {:<44} {:<9} {:<6} {:<10} {:<7} {:<6} {:<9} {}\n", "name", "dtype", "layout", "mode", "isa",
               "device", "supported", "tuned for");
    for (int32_t i = 0; i < n; ++i) {
        const fbngrad_variant_info *v = fbngrad_variant(i);
        if (!v) continue;
        fmt::print("  {:<44} {:<9} {:<6} {:<10} {:<7} {:<6} {:<9} {}\n", v->name, dtype_name(v->dtype),
                   layout_name(v->layout), mode_name(v->is_training), v->isa, device_name(v->device),
                   v->supported ? "yes" : "no", *v->shape_classes ? v->shape_classes : "-");
    }

    // Rows start with the phase, not the name: the name column above is the fused variants'.
    if (split_variants().empty()) {
        fmt::print("\nsplit-phase variants: none (left out of this build: FBNGRAD_SPLIT_PHASE=OFF)\n");
    } else {
        fmt::print("\nsplit-phase variants ({}; each call uses the ISA the fused op would):\n",
                   split_variants().size());
        fmt::print("  {:<7} {:<32} {:<7} {}\n", "phase", "name", "isa", "device");
    }
    for (const SplitVariant &v : split_variants())
        fmt::print("  {:<7} {:<32} {:<7} {}\n", v.phase, v.name, v.isa, device_name(v.device));

    fmt::print("\nvariant used here:\n");
    fmt::print("  {:<9} {:<6} {:<10} {:<32} {}\n", "dtype", "layout", "mode", "cpu", "cuda");
    for (fbngrad_dtype t : kDtypes)
        for (fbngrad_layout l : kLayouts)
            for (int32_t m : kModes) {
                std::string cpu = selected(t, l, m, FBNGRAD_CPU), cuda = selected(t, l, m, FBNGRAD_CUDA);
                fmt::print("  {:<9} {:<6} {:<10} {:<32} {}\n", dtype_name(t), layout_name(l), mode_name(m),
                           cpu.empty() ? none_here(t, l, m, FBNGRAD_CPU) : cpu,
                           cuda.empty() ? none_here(t, l, m, FBNGRAD_CUDA) : cuda);
            }
    return kExitOk;
}

}  // namespace

Command add_info_command(CLI::App &app) {
    auto json = std::make_shared<bool>(false);
    CLI::App *sub = app.add_subcommand("info", "Show the compiled variants, the CPU features and the dispatch choices");
    sub->add_flag("--json", *json, "print JSON instead of text");
    return [json] { return *json ? info_json() : info_text(); };
}

}  // namespace fbngrad::cli
