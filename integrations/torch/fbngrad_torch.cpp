// fbngrad as PyTorch's CPU batch-norm backward.
//
// A shared library that PyTorch's Python package loads (fbngrad.torch, through ctypes). It
// uses only fbngrad's public C API (fbngrad/fbngrad.h) and the built libfbngrad.a, and
// PyTorch's C++ API (ATen, c10, torch/library.h).
//
// fbngrad_torch_enable() registers CPU kernels for aten::native_batch_norm_backward (and
// aten::batch_norm_backward, where this PyTorch has it) in a torch::Library held here;
// fbngrad_torch_disable() destroys that library, which removes the registrations, and the
// dispatcher serves PyTorch's own kernels again. While enabled, fbngrad's parallel loops run
// on PyTorch's intra-op pool (at::parallel_for) through fbngrad_set_parallel_for, so
// torch.set_num_threads governs them and fbngrad's own pool never starts.
//
// What fbngrad serves: float32, bfloat16 and float16 inputs of 2 to 5 dimensions, dense in
// the contiguous (N, C, ...) order or in the channels-last (N, ..., C) order, with grad_out
// of the same dtype; training (save_mean, save_invstd given: reserve_space_2 is an inverse
// std) and eval (running_mean, running_var given: a variance, with eps). Everything else goes
// to PyTorch's own CPU kernel (at::cpu::...) with the arguments unchanged.
#include <ATen/Parallel.h>
#include <ATen/TensorOperators.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/native_batch_norm_backward_cpu_dispatch.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/sqrt.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>
#include <torch/library.h>
#include <torch/version.h>

#if __has_include(<ATen/ops/batch_norm_backward_cpu_dispatch.h>)
#include <ATen/ops/batch_norm_backward_cpu_dispatch.h>
#define FBNGRAD_TORCH_HAS_BATCH_NORM_BACKWARD 1  // PyTorch 2.x: the _batch_norm_with_update path
#else
#define FBNGRAD_TORCH_HAS_BATCH_NORM_BACKWARD 0
#endif

#include <array>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "fbngrad/fbngrad.h"

#define FBNGRAD_TORCH_API extern "C" __attribute__((visibility("default")))

namespace {

using Grads = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

// ---- counters: which kernel served each call ----
enum Counter {
    kFused,        // fbngrad_fused_batch_norm_grad_v2: every output, or grad_input in training
    kReduceOnly,   // fbngrad_split_phase_reduce: grad_weight / grad_bias without grad_input
    kApplyOnly,    // fbngrad_split_phase_apply with no sums: grad_input alone in eval
    kNothingAsked, // output_mask all false: no work at all
    kFallback,     // PyTorch's own kernel
    kGradOutCopy,  // grad_out copied into input's layout first (as ATen's kernel does)
    kCounters
};
std::atomic<int64_t> g_counters[kCounters];
std::mutex g_reason_mutex;
std::string g_last_fallback;  // why the last call went to PyTorch's kernel

void count(Counter c) { g_counters[c].fetch_add(1, std::memory_order_relaxed); }

Grads fallback_because(const char *reason) {
    count(kFallback);
    std::lock_guard<std::mutex> lock(g_reason_mutex);
    g_last_fallback = reason;
    return {};
}

// ---- fbngrad's parallel loops on at::parallel_for ----
int aten_parallel_for(void *, int32_t count, fbngrad_task_fn task, void *task_ctx) {
    std::atomic<int> result{0};
    at::parallel_for(0, count, 1, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) {
            const int r = task(task_ctx, static_cast<int32_t>(i));
            if (r != 0) result.store(r, std::memory_order_relaxed);
        }
    });
    return result.load();
}

// ---- layouts ----
// True when t's elements lie densely in memory in the order `order` of its dimensions
// (outermost first). Dimensions of size 1 may have any stride, as in PyTorch's own checks.
bool dense_in_order(const at::Tensor &t, const std::vector<int64_t> &order) {
    if (t.numel() == 0) return true;
    int64_t expected = 1;
    for (auto k = order.rbegin(); k != order.rend(); ++k) {
        const int64_t size = t.size(*k);
        if (size != 1 && t.stride(*k) != expected) return false;
        expected *= size;
    }
    return true;
}

std::vector<int64_t> order_of(int64_t rank, fbngrad_layout layout) {
    std::vector<int64_t> order(static_cast<size_t>(rank));
    std::iota(order.begin(), order.end(), 0);
    if (layout == FBNGRAD_NHWC) std::rotate(order.begin() + 1, order.begin() + 2, order.end());  // N, ..., C
    return order;
}

std::vector<int64_t> inverse_of(const std::vector<int64_t> &order) {
    std::vector<int64_t> inverse(order.size());
    for (size_t k = 0; k < order.size(); ++k) inverse[static_cast<size_t>(order[k])] = static_cast<int64_t>(k);
    return inverse;
}

// t's data as the fbngrad tensor (rank 4 or 5) of `layout`: 2-D [N, C] and 3-D [N, C, L] get
// trailing spatial dimensions of size 1.
fbngrad_tensor view_of(const at::Tensor &t, fbngrad_dtype dtype, fbngrad_layout layout) {
    std::vector<int64_t> nchw(t.sizes().begin(), t.sizes().end());
    while (nchw.size() < 4) nchw.push_back(1);
    std::vector<int64_t> shape = nchw;
    if (layout == FBNGRAD_NHWC) std::rotate(shape.begin() + 1, shape.begin() + 2, shape.end());
    return fbngrad_make_tensor(t.data_ptr(), dtype, static_cast<int32_t>(shape.size()), shape.data(), layout);
}

fbngrad_tensor vec_of(const at::Tensor &t) {  // a dense float32 tensor, [C] unless a caller erred
    TORCH_CHECK(t.dim() <= FBNGRAD_MAX_RANK, "fbngrad: a parameter or statistic of ", t.dim(), " dimensions");
    return fbngrad_make_tensor(t.data_ptr(), FBNGRAD_FLOAT32, static_cast<int32_t>(t.dim()), t.sizes().data(),
                               FBNGRAD_NCHW);
}

// A float32 dense 1-D copy of a parameter or statistic only where it is not one already.
at::Tensor as_f32(const at::Tensor &t) {
    if (t.scalar_type() == at::kFloat && t.is_contiguous()) return t;
    return t.to(at::kFloat).contiguous();
}

void check(fbngrad_code code, const fbngrad_status &status) {
    TORCH_CHECK(code == FBNGRAD_OK, "fbngrad: ", status.message);
}

// ---- the kernel ----
// Returns the three gradients, or all-undefined tensors and `served == false` where the
// call must go to PyTorch's own kernel.
Grads fbngrad_backward(const at::Tensor &grad_out_in, const at::Tensor &input, const at::Tensor &weight,
                       const at::Tensor &running_mean, const at::Tensor &running_var, const at::Tensor &save_mean,
                       const at::Tensor &save_invstd, bool train, double eps, std::array<bool, 3> mask,
                       bool *served) {
    *served = false;
    if (input.device().type() != c10::DeviceType::CPU || grad_out_in.device().type() != c10::DeviceType::CPU)
        return fallback_because("not a CPU tensor");
    if (input.layout() != c10::kStrided || grad_out_in.layout() != c10::kStrided)
        return fallback_because("not a strided tensor");
    fbngrad_dtype dtype;
    switch (input.scalar_type()) {
    case at::kFloat: dtype = FBNGRAD_FLOAT32; break;
    case at::kBFloat16: dtype = FBNGRAD_BFLOAT16; break;
    case at::kHalf: dtype = FBNGRAD_FLOAT16; break;
    default: return fallback_because("dtype other than float32, bfloat16, float16");
    }
    if (grad_out_in.scalar_type() != input.scalar_type()) return fallback_because("grad_out's dtype differs from input's");
    const int64_t rank = input.dim();
    if (rank < 2 || rank > 5) return fallback_because("input of fewer than 2 or more than 5 dimensions");
    if (grad_out_in.sizes() != input.sizes()) return fallback_because("grad_out's shape differs from input's");
    const at::Tensor &mean = train ? save_mean : running_mean;
    const at::Tensor &var = train ? save_invstd : running_var;
    if (!mean.defined() || !var.defined())
        return fallback_because(train ? "training without save_mean / save_invstd"
                                      : "eval without running_mean / running_var");
    for (const at::Tensor *p : {&weight, &mean, &var})
        if (p->defined() && (p->device().type() != c10::DeviceType::CPU || p->layout() != c10::kStrided))
            return fallback_because("a parameter or statistic is not a strided CPU tensor");

    // The layout: channels-last where the input is dense that way (with one spatial element
    // both orders hold, and channels-last lets fbngrad sum N rows of C), else contiguous.
    const int64_t spatial = input.numel() == 0 ? 0 : input.numel() / (input.size(0) * input.size(1));
    const bool nchw_ok = dense_in_order(input, order_of(rank, FBNGRAD_NCHW));
    const bool nhwc_ok = dense_in_order(input, order_of(rank, FBNGRAD_NHWC));
    fbngrad_layout layout;
    if (nhwc_ok && (!nchw_ok || spatial == 1))
        layout = FBNGRAD_NHWC;
    else if (nchw_ok)
        layout = FBNGRAD_NCHW;
    else
        return fallback_because("input is neither contiguous nor channels-last");

    *served = true;
    const int64_t channels = input.size(1);
    const at::TensorOptions f32 = input.options().dtype(at::kFloat);
    if (!mask[0] && !mask[1] && !mask[2]) {
        count(kNothingAsked);
        return {};
    }

    const std::vector<int64_t> order = order_of(rank, layout);
    at::Tensor grad_out = grad_out_in;
    if (!dense_in_order(grad_out, order)) {  // e.g. the expanded ones of y.sum().backward()
        count(kGradOutCopy);
        grad_out = grad_out.permute(order).contiguous().permute(inverse_of(order));
    }

    const at::Tensor scale = weight.defined() ? as_f32(weight) : at::ones({channels}, f32);
    const at::Tensor mean32 = as_f32(mean), var32 = as_f32(var);
    fbngrad_attrs attrs;
    fbngrad_attrs_init(&attrs);
    attrs.epsilon = static_cast<float>(eps);
    attrs.is_training = train ? 1 : 0;
    attrs.reserve_space_2_is = train ? FBNGRAD_RS2_INVERSE_STD : FBNGRAD_RS2_VARIANCE;

    const fbngrad_tensor t_dy = view_of(grad_out, dtype, layout), t_x = view_of(input, dtype, layout);
    const fbngrad_tensor t_scale = vec_of(scale), t_mean = vec_of(mean32), t_var = vec_of(var32);
    fbngrad_status status;
    at::Tensor grad_input, grad_weight, grad_bias;

    if (!mask[0]) {
        // grad_weight / grad_bias alone: the split phase's sums, then two [C] vectors.
        at::Tensor sum_dy = at::empty({channels}, f32), sum_dyxc = at::empty({channels}, f32);
        fbngrad_tensor t_sum_dy = vec_of(sum_dy), t_sum_dyxc = vec_of(sum_dyxc);
        int64_t n = 0;
        // reduce checks only y_backprop, x and reserve_space_1; the [C] vectors are checked here
        // in TensorFlow's words (as the fused op would).
        TORCH_CHECK(scale.numel() == channels, "fbngrad: scale must have the same number of elements as the "
                    "channels of x, got ", scale.numel(), " and ", channels);
        TORCH_CHECK(var32.numel() == channels, "fbngrad: reserve_space_2 must have the same number of elements "
                    "as the channels of x, got ", var32.numel(), " and ", channels);
        check(fbngrad_split_phase_reduce(&t_dy, &t_x, &t_mean, &t_sum_dy, &t_sum_dyxc, &n, &status), status);
        count(kReduceOnly);
        if (mask[1]) {
            const at::Tensor inv = train ? var32 : 1.0 / at::sqrt(var32 + eps);
            grad_weight = sum_dyxc * inv;
        }
        if (mask[2]) grad_bias = sum_dy;
    } else {
        // As PyTorch's kernel allocates it (input's suggested memory format), where that is dense
        // in the layout's order (it is but for a 3-D input stored as [N, L, C]).
        grad_input = at::empty(input.sizes(), input.options().memory_format(input.suggest_memory_format()));
        if (!dense_in_order(grad_input, order)) {
            std::vector<int64_t> sizes(order.size());
            for (size_t k = 0; k < order.size(); ++k) sizes[k] = input.size(order[k]);
            grad_input = at::empty(sizes, input.options()).permute(inverse_of(order));
        }
        fbngrad_tensor t_dx = view_of(grad_input, dtype, layout);
        at::Tensor dscale = at::empty({channels}, f32), doffset = at::empty({channels}, f32);
        fbngrad_tensor t_dscale = vec_of(dscale), t_doffset = vec_of(doffset);
        if (!train && !mask[1] && !mask[2]) {
            // eval, grad_input alone: dx = dy * scale * inv needs no sums; apply with zero sums.
            at::Tensor zeros = at::zeros({channels}, f32);
            fbngrad_tensor t_zeros = vec_of(zeros);
            const int64_t n = input.numel() / std::max<int64_t>(channels, 1);
            check(fbngrad_split_phase_apply(&t_dy, &t_x, &t_scale, &t_mean, &t_var, &t_zeros, &t_zeros, n, &attrs,
                                            &t_dx, &t_dscale, &t_doffset, &status),
                  status);
            count(kApplyOnly);
        } else {
            check(fbngrad_fused_batch_norm_grad_v2(&t_dy, &t_x, &t_scale, &t_mean, &t_var, &attrs, &t_dx, &t_dscale,
                                                   &t_doffset, &status),
                  status);
            count(kFused);
        }
        if (mask[1]) grad_weight = dscale;
        if (mask[2]) grad_bias = doffset;
    }
    // grad_weight and grad_bias in the parameters' dtype, as PyTorch's kernel returns them.
    const at::ScalarType param_type = weight.defined() ? weight.scalar_type() : input.scalar_type();
    if (grad_weight.defined() && grad_weight.scalar_type() != param_type) grad_weight = grad_weight.to(param_type);
    if (grad_bias.defined() && grad_bias.scalar_type() != param_type) grad_bias = grad_bias.to(param_type);
    return {grad_input, grad_weight, grad_bias};
}

const at::Tensor &value_or_undefined(const c10::optional<at::Tensor> &t) {
    static const at::Tensor undefined;
    return t.has_value() ? *t : undefined;
}

// aten::native_batch_norm_backward(grad_out, input, weight?, running_mean?, running_var?,
//     save_mean?, save_invstd?, bool train, float eps, bool[3] output_mask)
Grads native_batch_norm_backward(const at::Tensor &grad_out, const at::Tensor &input,
                                 const c10::optional<at::Tensor> &weight,
                                 const c10::optional<at::Tensor> &running_mean,
                                 const c10::optional<at::Tensor> &running_var,
                                 const c10::optional<at::Tensor> &save_mean,
                                 const c10::optional<at::Tensor> &save_invstd, bool train, double eps,
                                 std::array<bool, 3> output_mask) {
    bool served = false;
    Grads g = fbngrad_backward(grad_out, input, value_or_undefined(weight), value_or_undefined(running_mean),
                               value_or_undefined(running_var), value_or_undefined(save_mean),
                               value_or_undefined(save_invstd), train, eps, output_mask, &served);
    if (served) return g;
    return at::cpu::native_batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean,
                                               save_invstd, train, eps, output_mask);
}

#if FBNGRAD_TORCH_HAS_BATCH_NORM_BACKWARD
// aten::batch_norm_backward(grad_out, input, weight, running_mean?, running_var?, save_mean?,
//     save_var?, bool update, float eps, bool[3] output_mask, reserve): `update` is training.
// The signature is taken from PyTorch's own CPU function, whatever its parameter types.
const at::Tensor &value_or_undefined(const at::Tensor &t) { return t; }
template <class Sig>
struct BatchNormBackward;
template <class... Args>
struct BatchNormBackward<Grads (*)(Args...)> {
    static Grads call(Args... args) {
        return run(std::forward<Args>(args)...);
    }
    template <class W, class O, class R>
    static Grads run(const at::Tensor &grad_out, const at::Tensor &input, const W &weight, const O &running_mean,
                     const O &running_var, const O &save_mean, const O &save_var, bool update, double eps,
                     std::array<bool, 3> output_mask, const R &reserve) {
        bool served = false;
        Grads g = fbngrad_backward(grad_out, input, value_or_undefined(weight), value_or_undefined(running_mean),
                                   value_or_undefined(running_var), value_or_undefined(save_mean),
                                   value_or_undefined(save_var), update, eps, output_mask, &served);
        if (served) return g;
        return at::cpu::batch_norm_backward(grad_out, input, weight, running_mean, running_var, save_mean, save_var,
                                            update, eps, output_mask, reserve);
    }
};
using NewBackward = BatchNormBackward<decltype(&at::cpu::batch_norm_backward)>;
#endif

// PyTorch warns (through c10's warning handler, to stderr) on every registration that overrides
// a kernel. Overriding is the point here: that one message is dropped, any other passes on.
class QuietOverride : public c10::WarningHandler {
public:
    explicit QuietOverride(c10::WarningHandler *next) : next_(next) {}
#if TORCH_VERSION_MAJOR >= 2
    void process(const c10::Warning &warning) override {
        if (!is_override(warning.msg())) next_->process(warning);
    }
#else
    void process(const c10::SourceLocation &where, const std::string &msg, const bool verbatim) override {
        if (!is_override(msg)) next_->process(where, msg, verbatim);
    }
#endif
private:
    static bool is_override(const std::string &msg) {
        return msg.find("Overriding a previously registered kernel") != std::string::npos;
    }
    c10::WarningHandler *next_;
};

std::mutex g_enable_mutex;
std::unique_ptr<torch::Library> g_library;

}  // namespace

// ---- the C interface that fbngrad.torch calls through ctypes ----

// Registers the kernels and the runner; 0 on success, else non-zero with a message in `error`.
FBNGRAD_TORCH_API int fbngrad_torch_enable(char *error, size_t error_size) {
    std::lock_guard<std::mutex> lock(g_enable_mutex);
    if (g_library) return 0;
    try {
#if TORCH_VERSION_MAJOR >= 2
        namespace warnings = c10::WarningUtils;
#else
        namespace warnings = c10::Warning;
#endif
        QuietOverride quiet(warnings::get_warning_handler());
        warnings::WarningHandlerGuard guard(&quiet);
        auto lib = std::make_unique<torch::Library>(torch::Library::IMPL, "aten", c10::DispatchKey::CPU, __FILE__,
                                                    __LINE__);
        lib->impl("native_batch_norm_backward", TORCH_FN(native_batch_norm_backward));
#if FBNGRAD_TORCH_HAS_BATCH_NORM_BACKWARD
        lib->impl("batch_norm_backward", TORCH_FN(NewBackward::call));
#endif
        fbngrad_set_parallel_for(aten_parallel_for, nullptr);
        g_library = std::move(lib);
        return 0;
    } catch (const std::exception &e) {
        if (error && error_size) {
            std::strncpy(error, e.what(), error_size - 1);
            error[error_size - 1] = '\0';
        }
        return 1;
    }
}

// Removes the registrations (PyTorch's own kernels serve again) and the runner.
FBNGRAD_TORCH_API void fbngrad_torch_disable(void) {
    std::lock_guard<std::mutex> lock(g_enable_mutex);
    if (!g_library) return;
    g_library.reset();
    fbngrad_set_parallel_for(nullptr, nullptr);
}

FBNGRAD_TORCH_API int fbngrad_torch_enabled(void) {
    std::lock_guard<std::mutex> lock(g_enable_mutex);
    return g_library ? 1 : 0;
}

// 1 when this build registers aten::batch_norm_backward too (PyTorch 2.x).
FBNGRAD_TORCH_API int fbngrad_torch_has_batch_norm_backward(void) { return FBNGRAD_TORCH_HAS_BATCH_NORM_BACKWARD; }

FBNGRAD_TORCH_API int fbngrad_torch_counter_count(void) { return kCounters; }

// fused, reduce_only, apply_only, nothing_asked, fallback, grad_out_copy
FBNGRAD_TORCH_API void fbngrad_torch_counters(int64_t *out) {
    for (int i = 0; i < kCounters; ++i) out[i] = g_counters[i].load();
}

FBNGRAD_TORCH_API void fbngrad_torch_reset_counters(void) {
    for (auto &c : g_counters) c.store(0);
    std::lock_guard<std::mutex> lock(g_reason_mutex);
    g_last_fallback.clear();
}

// Why the last call went to PyTorch's own kernel ("" if none did since the last reset).
FBNGRAD_TORCH_API size_t fbngrad_torch_last_fallback(char *out, size_t size) {
    std::lock_guard<std::mutex> lock(g_reason_mutex);
    if (out && size) {
        std::strncpy(out, g_last_fallback.c_str(), size - 1);
        out[size - 1] = '\0';
    }
    return g_last_fallback.size();
}

FBNGRAD_TORCH_API const char *fbngrad_torch_fbngrad_version(void) { return fbngrad_version(); }

// The PyTorch version this library was compiled against, "MAJOR.MINOR".
FBNGRAD_TORCH_API const char *fbngrad_torch_built_against(void) { return FBNGRAD_TORCH_BUILT_AGAINST; }
