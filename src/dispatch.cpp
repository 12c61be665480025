#include "dispatch.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "fbngrad_variant_headers.h"
#include "left_out.h"
#include "two_pass_route.h"

namespace fbngrad {
namespace {

// "cache,dram" -> the classes' bits (the build writes known names only).
uint32_t class_mask(const char *list) {
    uint32_t m = 0;
    std::string s(list);
    for (size_t a = 0; a <= s.size();) {
        size_t b = s.find(',', a);
        if (b == std::string::npos) b = s.size();
        ShapeClass k;
        if (parse_shape_class(s.substr(a, b - a).c_str(), &k)) m |= 1u << int(k);
        a = b + 1;
    }
    return m;
}

std::vector<Variant> build_table() {
    std::vector<Variant> t;
#define FBNGRAD_VARIANT(name, dtype, layout, training, isa, device) \
    t.push_back(Variant{{#name, dtype, layout, training, #isa, device, cpu_has(Isa::isa) ? 1 : 0, ""}, Isa::isa, name});
#define FBNGRAD_TUNED_VARIANT(name, dtype, layout, training, isa, device, classes)                                  \
    t.push_back(Variant{{#name, dtype, layout, training, #isa, device, cpu_has(Isa::isa) ? 1 : 0, classes}, Isa::isa, \
                        name, class_mask(classes)});
#include "fbngrad_variants.inc"
#undef FBNGRAD_TUNED_VARIANT
#undef FBNGRAD_VARIANT
    for (Variant &v : t) v.two_pass = find_two_pass_route(v.info.name);
    return t;
}

const std::vector<Variant> &table() {
    static const std::vector<Variant> t = build_table();
    return t;
}

// The table's rows as fbngrad_variant_info, for left_out.h.
const std::vector<fbngrad_variant_info> &table_infos() {
    static const std::vector<fbngrad_variant_info> t = [] {
        std::vector<fbngrad_variant_info> r;
        for (const Variant &v : table()) r.push_back(v.info);
        return r;
    }();
    return t;
}

// The CPU ISAs that the table has, best first (those FBNGRAD_ISAS kept).
std::vector<std::string> built_cpu_isas() {
    std::vector<std::string> r;
    for (const Variant &v : table()) {
        if (v.info.device != FBNGRAD_CPU) continue;
        bool seen = false;
        for (const std::string &i : r) seen |= i == v.info.isa;
        if (!seen) r.push_back(v.info.isa);
    }
    return r;
}

bool isa_built(Isa isa) {
    for (const Variant &v : table())
        if (v.isa == isa) return true;
    return false;
}

// " (FBNGRAD_ISAS left out neon)" where the build left out ISAs of this platform; else "".
std::string isas_left_out_note() {
    std::string out;
    for (Isa i : platform_isas())
        if (!isa_built(i)) out += (out.empty() ? "" : ", ") + std::string(isa_name(i));
    return out.empty() ? "" : " (this build has " + left_out_detail::join(built_cpu_isas(), ", ") +
                                  "; FBNGRAD_ISAS left out " + out + ")";
}

// select_variant's answers, kept: its scans of the table took 0.13 us a call
// (more where the call's tensors had pushed the table out of the cache), a
// twentieth of what a small call spends outside its parallel tasks. One
// entry per dtype, layout, mode, device and shape class (or none), holding
// (generation << 16) | (index + 1). Forcing an ISA or a variant starts a new
// generation, which makes every kept answer stale; an answer computed while
// the generation changed is kept under the old one, so it is never used.
constexpr int kNoClass = int(ShapeClass::Plane) + 1;
constexpr int kMemoEntries = 3 * 2 * 2 * 2 * (kNoClass + 1);
std::atomic<uint64_t> g_generation{1};
std::atomic<uint64_t> g_answers[kMemoEntries];

// The entry of a problem, or -1 for enum values outside the table's (a C caller's ints).
int answer_index(fbngrad_dtype dtype, fbngrad_layout layout, bool is_training, fbngrad_device device,
                 const ShapeClass *k) {
    const int d = int(dtype), l = int(layout), v = int(device), c = k ? int(*k) : kNoClass;
    if (d < 0 || d > 2 || l < 0 || l > 1 || v < 0 || v > 1 || c < 0 || c > kNoClass) return -1;
    return (((d * 2 + l) * 2 + int(is_training)) * 2 + v) * (kNoClass + 1) + c;
}

void new_generation() { g_generation.fetch_add(1); }

// -1: automatic; otherwise the forced Isa. A bad FBNGRAD_ISA is not ignored:
// every call then fails and says so, until the program forces an ISA itself.
std::atomic<int> g_forced{-1};
std::string g_env_error;  // written once, inside read_environment_once
std::atomic<bool> g_env_error_cleared{false};

bool set_forced(const std::string &name, std::string *msg) {
    if (name.empty()) {
        g_forced = -1;
        new_generation();
        return true;
    }
    Isa isa;
    if (!parse_isa(name, &isa)) {
        *msg = "unknown ISA \"" + name + "\"; fbngrad knows " + platform_isa_names();
        return false;
    }
    if (!isa_built(isa)) {
        *msg = isa_left_out(name, built_cpu_isas());
        return false;
    }
    if (!cpu_has(isa)) {
        *msg = "this CPU cannot run " + name + " (it has: " + cpu_features().describe() + ")";
        return false;
    }
    g_forced = int(isa);
    new_generation();
    return true;
}

void read_environment_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        const char *env = std::getenv("FBNGRAD_ISA");
        if (!env || !*env) return;
        std::string msg;
        if (!set_forced(env, &msg)) g_env_error = "FBNGRAD_ISA=" + std::string(env) + ": " + msg;
    });
}

// -1: none; otherwise the index of the variant forced for its row (force_variant).
std::atomic<int> g_forced_variant{-1};

}  // namespace

int variant_count() { return int(table().size()); }

bool force_variant(const std::string &name, std::string *msg) {
    if (name.empty()) {
        g_forced_variant = -1;
        new_generation();
        return true;
    }
    for (int i = 0; i < variant_count(); ++i) {
        const Variant &v = table()[i];
        if (name != v.info.name) continue;
        if (!v.info.supported) {
            *msg = "this machine cannot run " + name;
            return false;
        }
        g_forced_variant = i;
        new_generation();
        return true;
    }
    *msg = "no compiled variant is named \"" + name + "\"";
    return false;
}
const Variant &variant(int i) { return table()[i]; }

bool force_isa(const std::string &name, std::string *msg) {
    read_environment_once();
    if (!set_forced(name, msg)) return false;
    g_env_error_cleared = true;
    return true;
}

const char *forced_isa_name() {
    read_environment_once();
    int f = g_forced;
    return f < 0 ? "" : isa_name(Isa(f));
}

namespace {

// The dispatch rule itself (dispatch.h), without the kept answers.
const Variant *find_variant(fbngrad_dtype dtype, fbngrad_layout layout, bool is_training, fbngrad_device device,
                            const ShapeClass *shape_class) {
    const int forced = g_forced;
    const auto same_row = [&](const fbngrad_variant_info &i) {
        return i.dtype == dtype && i.layout == layout && (i.is_training != 0) == is_training && i.device == device;
    };
    const int fv = g_forced_variant;
    if (fv >= 0 && same_row(table()[fv].info)) return &table()[fv];
    for (const Variant &v : table()) {
        if (v.classes != 0 || !same_row(v.info)) continue;
        // A forced ISA restricts the CPU variants only; a CUDA variant needs a device.
        const bool forced_cpu = forced >= 0 && v.info.device == FBNGRAD_CPU;
        if (!(forced_cpu ? int(v.isa) == forced : cpu_has(v.isa))) continue;
        if (shape_class)
            for (const Variant &t : table())
                if (t.isa == v.isa && (t.classes >> int(*shape_class) & 1u) && same_row(t.info)) return &t;
        return &v;
    }
    return nullptr;
}

}  // namespace

const Variant *select_variant(fbngrad_dtype dtype, fbngrad_layout layout, bool is_training, fbngrad_device device,
                              std::string *why, const ShapeClass *shape_class, fbngrad_code *why_code) {
    fbngrad_code unused;
    fbngrad_code &code = why_code ? *why_code : unused;
    code = FBNGRAD_NOT_FOUND;
    read_environment_once();
    if (!g_env_error.empty() && !g_env_error_cleared) {
        *why = g_env_error;
        return nullptr;
    }
    const int key = answer_index(dtype, layout, is_training, device, shape_class);
    const uint64_t generation = g_generation.load();
    if (key >= 0) {
        const uint64_t kept = g_answers[key].load(std::memory_order_relaxed);
        if (kept >> 16 == generation) return &table()[int(kept & 0xffff) - 1];
    }
    const Variant *v = find_variant(dtype, layout, is_training, device, shape_class);
    if (v) {
        if (key >= 0) g_answers[key].store(generation << 16 | uint64_t(v - table().data() + 1), std::memory_order_relaxed);
        return v;
    }
    // Nothing to run: left out of this build (a selective build's options),
    // or built for CPUs other than this one.
    *why = left_out(table_infos(), dtype, layout, is_training, device);
    if (!why->empty()) {
        code = FBNGRAD_UNIMPLEMENTED;
        return nullptr;
    }
    *why = "no compiled variant of fbngrad can run this problem on this machine";
    if (device == FBNGRAD_CPU) *why += isas_left_out_note();
    return nullptr;
}

}  // namespace fbngrad
