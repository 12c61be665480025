// `fbngrad run`: the op on .npy files, all outputs written or none.
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.h"
#include "common.h"
#include "device_copy.h"
#include "fbngrad/fbngrad.h"
#include "npy.h"
#include "outdir.h"

namespace fbngrad::cli {
namespace {

struct RunOptions {
    std::string y_backprop, x, scale, reserve_space_1, reserve_space_2, out;
    std::string epsilon = "0.0001";
    std::string data_format = "NHWC";
    std::string is_training = "true";
    std::string reserve_space_2_is = "variance";
    std::string device = "cpu";
    std::string dtype;  // empty: taken from the files
};

struct Input {
    const char *what;   // "y_backprop", ...
    std::string path;
    NpyArray array;
};

struct InputError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

const char *descr_of(fbngrad_dtype t) { return t == FBNGRAD_FLOAT32 ? "<f4" : t == FBNGRAD_FLOAT16 ? "<f2" : "<u2"; }

// The dtype of y_backprop or x from its file's descr and --dtype.
fbngrad_dtype tensor_dtype(const Input &in, std::optional<fbngrad_dtype> forced) {
    const std::string &d = in.array.descr;
    if (forced) {
        if (d != descr_of(*forced))
            throw InputError(fmt::format("{}: {} is a '{}' array, but --dtype {} needs '{}'", in.path, in.what, d,
                                         dtype_name(*forced), descr_of(*forced)));
        return *forced;
    }
    if (d == "<f4") return FBNGRAD_FLOAT32;
    if (d == "<f2") return FBNGRAD_FLOAT16;
    throw InputError(fmt::format("{}: {} is a '<u2' array; uint16 arrays are read as raw bfloat16 bits only "
                                 "together with --dtype bfloat16",
                                 in.path, in.what));
}

void require_float32(const Input &in) {
    if (in.array.descr != "<f4")
        throw InputError(fmt::format("{}: {} must be float32 ('<f4'), not '{}'", in.path, in.what, in.array.descr));
}

fbngrad_tensor view(void *data, fbngrad_dtype dtype, const std::vector<int64_t> &shape, fbngrad_layout layout,
                    fbngrad_device device) {
    int64_t dims[FBNGRAD_MAX_RANK] = {0};
    for (size_t i = 0; i < shape.size() && i < size_t(FBNGRAD_MAX_RANK); ++i) dims[i] = shape[i];
    fbngrad_tensor t = fbngrad_make_tensor(data, dtype, int32_t(shape.size()), dims, layout);
    t.device = device;
    return t;
}

int run(const RunOptions &o) {
    // Attributes.
    const std::optional<float> epsilon = parse_float(o.epsilon);
    if (!epsilon) {
        fmt::print(stderr, "fbngrad run: --epsilon: '{}' is not a number\n", o.epsilon);
        return kExitUsage;
    }
    const std::optional<fbngrad_layout> layout = parse_data_format(o.data_format);
    if (!layout) {
        fmt::print(stderr, "{}\n", data_format_error(o.data_format));
        return kExitError;
    }
    fbngrad_attrs attrs;
    fbngrad_attrs_init(&attrs);
    attrs.epsilon = *epsilon;
    attrs.is_training = *parse_bool(o.is_training) ? 1 : 0;  // CLI11 allowed only true/false
    attrs.reserve_space_2_is = o.reserve_space_2_is == "inverse_std" ? FBNGRAD_RS2_INVERSE_STD : FBNGRAD_RS2_VARIANCE;
    const fbngrad_device device = o.device == "cuda" ? FBNGRAD_CUDA : FBNGRAD_CPU;
    const std::optional<fbngrad_dtype> forced = o.dtype.empty() ? std::nullopt : parse_dtype(o.dtype);

    // Inputs.
    Input dy{"y_backprop", o.y_backprop, {}}, x{"x", o.x, {}}, scale{"scale", o.scale, {}},
        rs1{"reserve_space_1", o.reserve_space_1, {}}, rs2{"reserve_space_2", o.reserve_space_2, {}};
    fbngrad_dtype dtype;
    try {
        for (Input *in : {&dy, &x, &scale, &rs1, &rs2}) in->array = read_npy(in->path);
        dtype = tensor_dtype(dy, forced);
        const fbngrad_dtype x_dtype = tensor_dtype(x, forced);
        if (x_dtype != dtype)
            throw InputError(fmt::format("{}: x is {} ('{}') but y_backprop ({}) is {} ('{}'); they must have the "
                                         "same dtype",
                                         x.path, dtype_name(x_dtype), x.array.descr, dy.path, dtype_name(dtype),
                                         dy.array.descr));
        for (const Input *in : {&scale, &rs1, &rs2}) require_float32(*in);
    } catch (const std::runtime_error &e) {  // NpyError, InputError
        fmt::print(stderr, "fbngrad run: {}\n", e.what());
        return kExitError;
    }

    // Outputs. scale_backprop / offset_backprop are [C]; C from x when x's rank is
    // valid (otherwise the op fails before it looks at them).
    const std::vector<int64_t> &xs = x.array.shape;
    int64_t C = scale.array.elements();
    if (xs.size() == 4 || xs.size() == 5) C = xs[*layout == FBNGRAD_NHWC ? xs.size() - 1 : 1];
    std::vector<unsigned char> x_backprop(at_least_one(x.array.elements()) * size_t(x.array.item_size()));
    std::vector<float> scale_backprop(at_least_one(C)), offset_backprop(at_least_one(C));

    auto in_view = [&](Input &in, fbngrad_dtype t) {
        // An empty array still gets a valid pointer.
        if (in.array.data.empty()) in.array.data.resize(4);
        return view(in.array.data.data(), t, in.array.shape, *layout, device);
    };
    fbngrad_tensor t_dy = in_view(dy, dtype), t_x = in_view(x, dtype), t_scale = in_view(scale, FBNGRAD_FLOAT32),
                   t_rs1 = in_view(rs1, FBNGRAD_FLOAT32), t_rs2 = in_view(rs2, FBNGRAD_FLOAT32);
    fbngrad_tensor t_dx = view(x_backprop.data(), dtype, xs, *layout, device);
    fbngrad_tensor t_ds = view(scale_backprop.data(), FBNGRAD_FLOAT32, {C}, *layout, device);
    fbngrad_tensor t_do = view(offset_backprop.data(), FBNGRAD_FLOAT32, {C}, *layout, device);

    // --device cuda: the library wants device pointers. Where no device is
    // usable the host views go as they are: the library validates them and
    // then answers "no CUDA device available" without touching them.
    DeviceCopies gpu;
    const bool on_gpu = device == FBNGRAD_CUDA && fbngrad_cuda_available();
    if (on_gpu) {
        std::string err;
        bool ok = gpu.open(&err);
        const std::pair<fbngrad_tensor *, Input *> inputs[] = {
            {&t_dy, &dy}, {&t_x, &x}, {&t_scale, &scale}, {&t_rs1, &rs1}, {&t_rs2, &rs2}};
        for (const auto &[t, in] : inputs)
            if (ok)
                ok = (t->data = gpu.copy_to_device(in->array.data.data(), in->array.data.size(), &err)) != nullptr;
        if (ok) ok = (t_dx.data = gpu.copy_to_device(nullptr, x_backprop.size(), &err)) != nullptr;
        if (ok) ok = (t_ds.data = gpu.copy_to_device(nullptr, 4 * scale_backprop.size(), &err)) != nullptr;
        if (ok) ok = (t_do.data = gpu.copy_to_device(nullptr, 4 * offset_backprop.size(), &err)) != nullptr;
        if (!ok) {
            fmt::print(stderr, "fbngrad run: --device cuda: {}\n", err);
            return kExitError;
        }
    }

    fbngrad_status status;
    if (fbngrad_fused_batch_norm_grad_v2(&t_dy, &t_x, &t_scale, &t_rs1, &t_rs2, &attrs, &t_dx, &t_ds, &t_do,
                                         &status) != FBNGRAD_OK) {
        fmt::print(stderr, "{}\n", status.message);
        if (status.code == FBNGRAD_UNAVAILABLE && device == FBNGRAD_CUDA)
            fmt::print(stderr, "({})\n", fbngrad_cuda_unavailable_reason());
        return kExitError;
    }
    if (on_gpu) {
        std::string err;
        const bool ok = gpu.copy_to_host(x_backprop.data(), t_dx.data, x_backprop.size(), &err) &&
                        gpu.copy_to_host(scale_backprop.data(), t_ds.data, 4 * scale_backprop.size(), &err) &&
                        gpu.copy_to_host(offset_backprop.data(), t_do.data, 4 * offset_backprop.size(), &err);
        if (!ok) {
            fmt::print(stderr, "fbngrad run: --device cuda: {}\n", err);
            return kExitError;
        }
    }

    // All five files or none.
    try {
        OutputDir out(o.out);
        out.create();
        const float none = 0.0f;
        auto npy = [&](const char *name, const char *descr, const std::vector<int64_t> &shape, const void *data) {
            out.add(name, [&](const std::string &tmp) { write_npy(tmp, descr, shape, data, true); });
        };
        npy("x_backprop.npy", x.array.descr.c_str(), xs, x_backprop.data());
        npy("scale_backprop.npy", "<f4", {C}, scale_backprop.data());
        npy("offset_backprop.npy", "<f4", {C}, offset_backprop.data());
        npy("reserve_space_3.npy", "<f4", {0}, &none);
        npy("reserve_space_4.npy", "<f4", {0}, &none);
        out.commit();
    } catch (const std::runtime_error &e) {
        fmt::print(stderr, "fbngrad run: {}\n", e.what());
        return kExitError;
    }
    return kExitOk;
}

}  // namespace

Command add_run_command(CLI::App &app) {
    auto o = std::make_shared<RunOptions>();
    CLI::App *sub = app.add_subcommand("run", "Run the op on .npy files and write its outputs as .npy files");
    sub->footer(
        "Inputs: y_backprop and x are '<f4' (float32), '<f2' (float16) or '<u2' arrays of raw bfloat16 bits\n"
        "(the last only with --dtype bfloat16), both of the same dtype and shape; scale, reserve_space_1 and\n"
        "reserve_space_2 are '<f4' arrays of shape [C].\n"
        "Outputs in DIR: x_backprop.npy (x's dtype and shape), scale_backprop.npy and offset_backprop.npy\n"
        "(float32 [C]), reserve_space_3.npy and reserve_space_4.npy (float32, shape (0,)). DIR is created if\n"
        "missing. On any error the message goes to stderr, the exit status is non-zero and no file is written.");
    // Required options are checked after parsing (not with CLI11's required()),
    // so that an unknown flag is reported as such and not as a missing option.
    std::vector<CLI::Option *> required = {
        sub->add_option("--y-backprop", o->y_backprop, "y_backprop .npy file (required)"),
        sub->add_option("--x", o->x, "x .npy file (required)"),
        sub->add_option("--scale", o->scale, "scale .npy file, float32 [C] (required)"),
        sub->add_option("--reserve-space-1", o->reserve_space_1, "mean .npy file, float32 [C] (required)"),
        sub->add_option("--reserve-space-2", o->reserve_space_2,
                        "variance or inverse-std .npy file, float32 [C] (required)"),
        sub->add_option("--out", o->out, "output directory (required)")};
    sub->add_option("--epsilon", o->epsilon, "epsilon (a float; nan and inf allowed)")->capture_default_str();
    sub->add_option("--data-format", o->data_format, "NHWC, NCHW, NDHWC or NCDHW")->capture_default_str();
    sub->add_option("--is-training", o->is_training, "true or false")
        ->check(CLI::IsMember({"true", "false"}, CLI::ignore_case))
        ->capture_default_str();
    sub->add_option("--reserve-space-2-is", o->reserve_space_2_is,
                    "variance (TF's CPU kernel) or inverse_std (TF's GPU kernel: 1/sqrt(var+eps))")
        ->check(CLI::IsMember({"variance", "inverse_std"}))
        ->capture_default_str();
    sub->add_option("--device", o->device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}))->capture_default_str();
    sub->add_option("--dtype", o->dtype, "float32, float16 or bfloat16; must match the files (default: from them)")
        ->check(CLI::IsMember({"float32", "float16", "bfloat16"}));
    return [o, required] {
        std::string missing;
        for (const CLI::Option *opt : required)
            if (opt->count() == 0) missing += (missing.empty() ? "" : ", ") + opt->get_name();
        if (!missing.empty()) {
            fmt::print(stderr, "fbngrad run: missing required option(s): {}\nRun with --help for more information.\n",
                       missing);
            return kExitUsage;
        }
        return run(*o);
    };
}

}  // namespace fbngrad::cli
