// `fbngrad demo`: a built-in ResNet-50-sized problem (N=32, H=W=56, C=64,
// float32, NHWC, training by default), timed and checked against the
// double-precision reference.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "common.h"
#include "fbngrad/fbngrad.h"
#include "reference.h"

namespace fbngrad::cli {
namespace {

struct DemoOptions {
    std::string dtype = "float32";
    std::string data_format = "NHWC";
    std::string shape = "32,56,56,64";  // N,H,W,C or N,D,H,W,C, whatever the layout
    std::string is_training = "true";
    std::string reserve_space_2_is = "variance";
    int iterations = 10;
    int threads = 0;  // 0: the library's default
    uint64_t seed = 20240607;
};

// SplitMix64: a tiny generator whose sequence is the same on every platform
// (std::uniform_real_distribution's is not).
class Rng {
public:
    explicit Rng(uint64_t seed) : s_(seed) {}
    uint64_t next() {
        uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
        return z ^ (z >> 31);
    }
    float uniform(float lo, float hi) { return lo + (hi - lo) * float(double(next() >> 40) * 0x1p-24); }

private:
    uint64_t s_;
};

std::optional<std::vector<int64_t>> parse_shape(const std::string &s) {
    std::vector<int64_t> dims;
    std::stringstream ss(s);
    std::string part;
    while (std::getline(ss, part, ',')) {
        if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos || part.size() > 12)
            return std::nullopt;
        dims.push_back(std::stoll(part));
    }
    if (dims.size() != 4 && dims.size() != 5) return std::nullopt;
    return dims;
}

int demo(const DemoOptions &o) {
    const fbngrad_dtype dtype = *parse_dtype(o.dtype);
    const std::optional<fbngrad_layout> layout = parse_data_format(o.data_format);
    if (!layout) {
        fmt::print(stderr, "{}\n", data_format_error(o.data_format));
        return kExitError;
    }
    const auto logical = parse_shape(o.shape);
    if (!logical) {
        fmt::print(stderr, "fbngrad demo: --shape must be N,H,W,C or N,D,H,W,C (non-negative integers), not '{}'\n",
                   o.shape);
        return kExitUsage;
    }
    if (o.iterations < 1) {
        fmt::print(stderr, "fbngrad demo: --iterations must be at least 1\n");
        return kExitUsage;
    }
    const bool training = *parse_bool(o.is_training);
    const bool inverse_std = o.reserve_space_2_is == "inverse_std";

    // The tensor's shape in its layout: channels last, or moved to dimension 1.
    const int rank = int(logical->size());
    std::vector<int64_t> shape = *logical;
    const int64_t C = shape.back();
    if (*layout == FBNGRAD_NCHW) {
        shape.pop_back();
        shape.insert(shape.begin() + 1, C);
    }
    int64_t elements = 1;
    for (int64_t d : shape) elements *= d;
    const int64_t S = C ? elements / (shape[0] ? shape[0] : 1) / C : 0;  // spatial size
    auto index = [&](int64_t n, int64_t s, int64_t c) {
        return *layout == FBNGRAD_NHWC ? (n * S + s) * C + c : (n * C + c) * S + s;
    };

    // Inputs: dy ~ U(-1, 1); x ~ U(-1, 1) * spread_c + shift_c; scale ~ U(0.5, 1.5);
    // mean and (biased) variance per channel computed from the rounded x.
    const int esize = ref::dtype_size(dtype);
    std::vector<unsigned char> dy(at_least_one(elements) * esize), x(at_least_one(elements) * esize),
        dx(at_least_one(elements) * esize), dx_first(at_least_one(elements) * esize);
    std::vector<float> scale(at_least_one(C)), mean(at_least_one(C)), rs2(at_least_one(C)),
        dscale(at_least_one(C)), doffset(at_least_one(C));
    Rng rng(o.seed);
    std::vector<float> shift(at_least_one(C)), spread(at_least_one(C));
    for (int64_t c = 0; c < C; ++c) {
        shift[c] = rng.uniform(-0.5f, 0.5f);
        spread[c] = rng.uniform(0.5f, 2.0f);
        scale[c] = rng.uniform(0.5f, 1.5f);
    }
    for (int64_t i = 0; i < elements; ++i) {
        const int64_t c = *layout == FBNGRAD_NHWC ? i % C : (i / S) % C;
        ref::store(dtype, dy.data(), i, rng.uniform(-1.0f, 1.0f));
        ref::store(dtype, x.data(), i, rng.uniform(-1.0f, 1.0f) * spread[c] + shift[c]);
    }
    const int64_t M = S * shape[0];
    for (int64_t c = 0; c < C; ++c) {
        double sum = 0, sum2 = 0;
        for (int64_t n = 0; n < shape[0]; ++n)
            for (int64_t s = 0; s < S; ++s) sum += ref::load(dtype, x.data(), index(n, s, c));
        const double m = M ? sum / double(M) : 0.0;
        for (int64_t n = 0; n < shape[0]; ++n)
            for (int64_t s = 0; s < S; ++s) {
                const double d = ref::load(dtype, x.data(), index(n, s, c)) - m;
                sum2 += d * d;
            }
        mean[c] = float(m);
        const float var = float(M ? sum2 / double(M) : 1.0);
        rs2[c] = inverse_std ? float(1.0 / std::sqrt(double(var) + 0.0001)) : var;
    }

    int64_t dims[FBNGRAD_MAX_RANK] = {0};
    std::copy(shape.begin(), shape.end(), dims);
    const int64_t cdims[1] = {C};
    const fbngrad_tensor t_dy = fbngrad_make_tensor(dy.data(), dtype, rank, dims, *layout);
    const fbngrad_tensor t_x = fbngrad_make_tensor(x.data(), dtype, rank, dims, *layout);
    fbngrad_tensor t_dx = fbngrad_make_tensor(dx.data(), dtype, rank, dims, *layout);
    const fbngrad_tensor t_scale = fbngrad_make_tensor(scale.data(), FBNGRAD_FLOAT32, 1, cdims, FBNGRAD_NHWC);
    const fbngrad_tensor t_mean = fbngrad_make_tensor(mean.data(), FBNGRAD_FLOAT32, 1, cdims, FBNGRAD_NHWC);
    const fbngrad_tensor t_rs2 = fbngrad_make_tensor(rs2.data(), FBNGRAD_FLOAT32, 1, cdims, FBNGRAD_NHWC);
    fbngrad_tensor t_ds = fbngrad_make_tensor(dscale.data(), FBNGRAD_FLOAT32, 1, cdims, FBNGRAD_NHWC);
    fbngrad_tensor t_do = fbngrad_make_tensor(doffset.data(), FBNGRAD_FLOAT32, 1, cdims, FBNGRAD_NHWC);
    fbngrad_attrs attrs;
    fbngrad_attrs_init(&attrs);
    attrs.is_training = training ? 1 : 0;
    attrs.reserve_space_2_is = inverse_std ? FBNGRAD_RS2_INVERSE_STD : FBNGRAD_RS2_VARIANCE;

    if (o.threads > 0) fbngrad_set_num_threads(o.threads);
    const int32_t threads_setting = fbngrad_set_num_threads(0);  // reads the setting ...
    fbngrad_set_num_threads(threads_setting);                    // ... and puts it back

    fbngrad_status status;
    auto call = [&] {
        return fbngrad_fused_batch_norm_grad_v2(&t_dy, &t_x, &t_scale, &t_mean, &t_rs2, &attrs, &t_dx, &t_ds,
                                                &t_do, &status);
    };
    if (call() != FBNGRAD_OK) {  // the warm-up call
        fmt::print(stderr, "{}\n", status.message);
        return kExitError;
    }
    std::memcpy(dx_first.data(), dx.data(), dx.size());
    std::vector<double> ms;
    for (int i = 0; i < o.iterations; ++i) {
        const auto t0 = std::chrono::steady_clock::now();
        const fbngrad_code code = call();
        const auto t1 = std::chrono::steady_clock::now();
        if (code != FBNGRAD_OK) {
            fmt::print(stderr, "{}\n", status.message);
            return kExitError;
        }
        ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    const double median = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
    const bool deterministic = std::memcmp(dx_first.data(), dx.data(), dx.size()) == 0;

    ref::Problem p;
    p.dtype = dtype;
    p.layout = *layout;
    p.rank = rank;
    std::copy(shape.begin(), shape.end(), p.shape);
    p.y_backprop = dy.data();
    p.x = x.data();
    p.scale = scale.data();
    p.mean = mean.data();
    p.reserve_space_2 = rs2.data();
    p.epsilon = attrs.epsilon;
    p.is_training = training;
    p.rs2_is_inverse_std = inverse_std;
    const ref::Expected e = ref::compute(p);
    const ref::Comparison cmp = ref::compare(p, e, dx.data(), dscale.data(), doffset.data());

    const fbngrad_variant_info *v = fbngrad_selected_variant(dtype, *layout, attrs.is_training, FBNGRAD_CPU);
    const double bytes = 3.0 * double(elements) * esize;
    const std::string threads =
        threads_setting > 0 ? std::to_string(threads_setting)
                            : fmt::format("default (one per core: {})", std::thread::hardware_concurrency());
    fmt::print("fbngrad {} demo: FusedBatchNormGradV2, {} {} {}, {}, reserve_space_2 = {}\n", fbngrad_version(),
               dtype_name(dtype), *layout == FBNGRAD_NHWC ? (rank == 5 ? "NDHWC" : "NHWC") : (rank == 5 ? "NCDHW" : "NCHW"),
               shape_string(shape), mode_name(attrs.is_training), inverse_std ? "inverse_std" : "variance");
    fmt::print("  variant:         {}\n", v ? v->name : "(none)");
    fmt::print("  cpu features:    {}\n", fbngrad_cpu_features());
    if (*fbngrad_forced_isa()) fmt::print("  forced isa:      {}\n", fbngrad_forced_isa());
    fmt::print("  threads:         {}\n", threads);
    fmt::print("  median time:     {:.3f} ms over {} calls (min {:.3f}, max {:.3f}), after one warm-up\n", median,
               ms.size(), ms.front(), ms.back());
    fmt::print("  bandwidth:       {:.1f} GB/s effective (x, y_backprop, x_backprop: {:.1f} MB)\n",
               median > 0 ? bytes / (median * 1e-3) / 1e9 : 0.0, bytes / 1e6);
    fmt::print("  max abs error:   {:.3g}\n", cmp.max_abs_error);
    fmt::print("  worst error/tol: {:.3g}\n", cmp.worst_ratio);
    fmt::print("  repeatable:      {}\n", deterministic ? "yes (bit-identical across calls)" : "NO");
    if (!cmp.ok()) fmt::print("  mismatches:      {} (first: {})\n", cmp.mismatches, cmp.first_mismatch);
    const bool pass = cmp.ok() && deterministic;
    fmt::print("{}\n", pass ? "PASS" : "FAIL");
    return pass ? kExitOk : kExitError;
}

}  // namespace

Command add_demo_command(CLI::App &app) {
    auto o = std::make_shared<DemoOptions>();
    CLI::App *sub = app.add_subcommand("demo", "Time and check a built-in ResNet-50-sized problem (no files needed)");
    sub->footer("Prints the variant used, the CPU features, the threads, the median time, the effective bandwidth\n"
                "and the error against the double-precision reference; exits 0 on PASS, 1 on FAIL.");
    sub->add_option("--dtype", o->dtype, "float32, float16 or bfloat16")
        ->check(CLI::IsMember({"float32", "float16", "bfloat16"}))
        ->capture_default_str();
    sub->add_option("--data-format,--layout", o->data_format, "NHWC, NCHW, NDHWC or NCDHW")->capture_default_str();
    sub->add_option("--shape", o->shape, "N,H,W,C or N,D,H,W,C (logical order, whatever the layout)")
        ->capture_default_str();
    sub->add_option("--is-training", o->is_training, "true or false")
        ->check(CLI::IsMember({"true", "false"}, CLI::ignore_case))
        ->capture_default_str();
    sub->add_option("--reserve-space-2-is", o->reserve_space_2_is, "variance or inverse_std")
        ->check(CLI::IsMember({"variance", "inverse_std"}))
        ->capture_default_str();
    sub->add_option("--iterations", o->iterations, "timed calls")->capture_default_str();
    sub->add_option("--threads", o->threads, "worker threads (0: one per core)")->capture_default_str();
    sub->add_option("--seed", o->seed, "seed of the pseudo-random inputs")->capture_default_str();
    return [o] { return demo(*o); };
}

}  // namespace fbngrad::cli
