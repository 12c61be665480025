#include "jit_candidate.h"

#include <stdexcept>
#include <thread>

#include "Halide.h"
#include "task_size.h"

namespace fbngrad_tune {

namespace {

// Halide's messages end in a newline; the tuner prints them inside lines.
std::string message(const Halide::Error &e) {
    std::string m = e.what();
    while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
    return m;
}

Halide::Type tensor_type(fbngrad_dtype d) {
    return d == FBNGRAD_FLOAT32 ? Halide::Float(32) : d == FBNGRAD_FLOAT16 ? Halide::Float(16) : Halide::UInt(16);
}

std::string type_param(fbngrad_dtype d) {
    return d == FBNGRAD_FLOAT32 ? "float32" : d == FBNGRAD_FLOAT16 ? "float16" : "uint16";
}

// The kernels' 3-D view of a dense tensor (generators/algorithm.h):
// NHWC (c, s = N*H*W, 1), NCHW (s = H*W, c, n).
Halide::Buffer<> view3(fbngrad_dtype d, const fbngrad_bench::Inputs &in, const void *data) {
    const fbngrad_bench::Shape &s = in.s;
    const int C = int(s.c), HW = int(s.h * s.w), N = int(s.n);
    halide_dimension_t dims[3];
    if (in.layout == FBNGRAD_NHWC) {
        dims[0] = {0, C, 1};
        dims[1] = {0, N * HW, C};
        dims[2] = {0, 1, N * HW * C};
    } else {
        dims[0] = {0, HW, 1};
        dims[1] = {0, C, HW};
        dims[2] = {0, N, HW * C};
    }
    return Halide::Buffer<>(tensor_type(d), const_cast<void *>(data), 3, dims);
}

Halide::Buffer<float> vec(const float *data, int C) { return Halide::Buffer<float>(const_cast<float *>(data), C); }

// Halide's JIT pool has a thread a core, as the library's own pool by default.
int jit_task_elements(void *, int elements, int rule_elements) {
    return fbngrad::runtime::own_pool_task_elements(elements, rule_elements,
                                                    int(std::thread::hardware_concurrency()));
}

int jit_even_piece(int units, int capped) { return fbngrad::runtime::even_piece(units, capped); }

int jit_strip_channels(int channels, int rows, int task_elements, int align, int widest) {
    return fbngrad::runtime::strip_channels(channels, rows, task_elements, align, widest);
}

}  // namespace

struct JitCandidate::Impl {
    Cell cell;
    Halide::Target target;
    std::unique_ptr<Halide::Internal::AbstractGenerator> gen;
    Halide::Pipeline pipeline;
};

JitCandidate::JitCandidate(const Candidate &c, const Cell &cell, const std::string &target) : impl_(new Impl) {
    impl_->cell = cell;
    try {
        impl_->target = Halide::Target(target);
        Halide::AutoschedulerParams as;
        if (!c.autoscheduler.empty()) {
            as.name = c.autoscheduler;
            as.extra["parallelism"] = "2";
        }
        Halide::GeneratorContext ctx(impl_->target, as);
        impl_->gen = Halide::Internal::GeneratorRegistry::create(c.generator, ctx);
        if (!impl_->gen) throw std::runtime_error("no generator named " + c.generator);
        auto &g = *impl_->gen;
        g.set_generatorparam_value("layout", layout_short(cell.layout));
        g.set_generatorparam_value("training", cell.training ? "true" : "false");
        for (const char *t : {"y_backprop.type", "x.type", "x_backprop.type"})
            g.set_generatorparam_value(t, type_param(cell.dtype));
        for (const auto &[k, v] : c.knobs) g.set_generatorparam_value(k, std::to_string(v));
        impl_->pipeline = g.build_pipeline();
        if (!c.autoscheduler.empty()) impl_->pipeline.apply_autoscheduler(impl_->target, as);
        // The task size the AOT library's runtime gives its own pool (runtime/parallel_runtime.h);
        // under the JIT user_context is Halide's, not a call of fbngrad's.
        impl_->pipeline.set_jit_externs({{"fbng_task_elements", Halide::JITExtern(jit_task_elements)},
                                         {"fbng_even_piece", Halide::JITExtern(jit_even_piece)},
                                         {"fbng_strip_channels", Halide::JITExtern(jit_strip_channels)}});
        impl_->pipeline.compile_jit(impl_->target);
    } catch (const Halide::Error &e) {
        throw std::runtime_error("does not compile: " + message(e));
    }
}

JitCandidate::~JitCandidate() = default;

void JitCandidate::run(const fbngrad_bench::Inputs &in, void *x_backprop, float *scale_backprop,
                       float *offset_backprop) {
    auto &g = *impl_->gen;
    const int C = int(in.s.c);
    try {
        g.input_parameter("y_backprop").at(0).set_buffer(view3(in.dtype, in, in.dy.data()));
        g.input_parameter("x").at(0).set_buffer(view3(in.dtype, in, in.x.data()));
        g.input_parameter("scale").at(0).set_buffer(vec(in.scale.data(), C));
        g.input_parameter("reserve_space_1").at(0).set_buffer(vec(in.mean.data(), C));
        g.input_parameter("reserve_space_2").at(0).set_buffer(vec(in.var.data(), C));
        g.input_parameter("epsilon").at(0).set_scalar<float>(0.0001f);
        g.input_parameter("rs2_is_inverse_std").at(0).set_scalar<bool>(false);
        Halide::Realization out(std::vector<Halide::Buffer<>>{view3(in.dtype, in, x_backprop),
                                                              vec(scale_backprop, C), vec(offset_backprop, C)});
        impl_->pipeline.realize(out, impl_->target);
    } catch (const Halide::Error &e) {
        throw std::runtime_error("fails: " + message(e));
    }
}

std::vector<std::string> load_autoschedulers(const std::string &target) {
    // name -> plugin path, from the build (bench/tune/CMakeLists.txt).
    static const std::vector<std::pair<std::string, std::string>> plugins = {
        {"Mullapudi2016", FBNGRAD_TUNE_PLUGIN_MULLAPUDI2016},
        {"Li2018", FBNGRAD_TUNE_PLUGIN_LI2018},
        {"Adams2019", FBNGRAD_TUNE_PLUGIN_ADAMS2019},
        {"Anderson2021", FBNGRAD_TUNE_PLUGIN_ANDERSON2021},
    };
    const bool gpu = Halide::Target(target).has_gpu_feature();
    std::vector<std::string> names;
    for (const auto &[name, path] : plugins) {
        if ((name == "Anderson2021") != gpu) continue;
        if (path.empty()) continue;
        try {
            Halide::load_plugin(path);
            names.push_back(name);
        } catch (const Halide::Error &) {
            // Reported by the caller as "not available"; the others still run.
        }
    }
    return names;
}

}  // namespace fbngrad_tune
