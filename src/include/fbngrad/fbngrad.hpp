// fbngrad C++ API: a header-only layer over the C API in fbngrad.h.
// No exceptions are thrown; every call returns an fbngrad::Status.
#ifndef FBNGRAD_FBNGRAD_HPP
#define FBNGRAD_FBNGRAD_HPP

#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "fbngrad/fbngrad.h"

namespace fbngrad {

enum class DType { Float32 = FBNGRAD_FLOAT32, Float16 = FBNGRAD_FLOAT16, BFloat16 = FBNGRAD_BFLOAT16 };
enum class Layout { NHWC = FBNGRAD_NHWC, NCHW = FBNGRAD_NCHW };
enum class Device { CPU = FBNGRAD_CPU, CUDA = FBNGRAD_CUDA };
enum class ReserveSpace2 { Variance = FBNGRAD_RS2_VARIANCE, InverseStd = FBNGRAD_RS2_INVERSE_STD };

class Status {
public:
    Status() = default;
    explicit Status(const fbngrad_status &s) : code_(s.code), message_(s.message) {}
    bool ok() const { return code_ == FBNGRAD_OK; }
    fbngrad_code code() const { return code_; }
    const std::string &message() const { return message_; }

private:
    fbngrad_code code_ = FBNGRAD_OK;
    std::string message_;
};

// A non-owning view of dense memory.
class TensorView {
public:
    TensorView(void *data, DType dtype, std::initializer_list<int64_t> shape, Layout layout = Layout::NHWC)
        : TensorView(data, dtype, std::vector<int64_t>(shape), layout) {}
    TensorView(void *data, DType dtype, const std::vector<int64_t> &shape, Layout layout = Layout::NHWC) {
        int64_t dims[FBNGRAD_MAX_RANK] = {0};
        int32_t rank = static_cast<int32_t>(shape.size());
        // A rank above the maximum is kept as is so that validation reports it.
        for (int32_t i = 0; i < rank && i < FBNGRAD_MAX_RANK; ++i) dims[i] = shape[i];
        t_ = fbngrad_make_tensor(data, static_cast<fbngrad_dtype>(dtype), rank, dims,
                                 static_cast<fbngrad_layout>(layout));
    }
    TensorView &on(Device d) {
        t_.device = static_cast<fbngrad_device>(d);
        return *this;
    }
    const fbngrad_tensor *c() const { return &t_; }
    fbngrad_tensor *c() { return &t_; }

private:
    fbngrad_tensor t_{};
};

struct Attrs {
    float epsilon = 0.0001f;
    bool is_training = true;
    ReserveSpace2 reserve_space_2_is = ReserveSpace2::Variance;
};

inline Status fused_batch_norm_grad_v2(const TensorView &y_backprop, const TensorView &x,
                                       const TensorView &scale, const TensorView &reserve_space_1,
                                       const TensorView &reserve_space_2, const Attrs &attrs,
                                       TensorView &x_backprop, TensorView &scale_backprop,
                                       TensorView &offset_backprop) {
    fbngrad_attrs a;
    a.epsilon = attrs.epsilon;
    a.is_training = attrs.is_training ? 1 : 0;
    a.reserve_space_2_is = static_cast<fbngrad_reserve_space_2_is>(attrs.reserve_space_2_is);
    fbngrad_status s;
    fbngrad_fused_batch_norm_grad_v2(y_backprop.c(), x.c(), scale.c(), reserve_space_1.c(),
                                     reserve_space_2.c(), &a, x_backprop.c(), scale_backprop.c(),
                                     offset_backprop.c(), &s);
    return Status(s);
}

// ---- split phase (fbngrad.h): batch norm synchronized across workers ----
// reduce on each worker's shard, allreduce (sum) sum_dy, sum_dyxc and count
// across the workers, then apply on each worker's shard.

inline Status split_phase_reduce(const TensorView &y_backprop, const TensorView &x, const TensorView &reserve_space_1,
                                 TensorView &sum_dy, TensorView &sum_dyxc, int64_t &count) {
    fbngrad_status s;
    fbngrad_split_phase_reduce(y_backprop.c(), x.c(), reserve_space_1.c(), sum_dy.c(), sum_dyxc.c(), &count, &s);
    return Status(s);
}

inline Status split_phase_apply(const TensorView &y_backprop, const TensorView &x, const TensorView &scale,
                                const TensorView &reserve_space_1, const TensorView &reserve_space_2,
                                const TensorView &sum_dy, const TensorView &sum_dyxc, int64_t count,
                                const Attrs &attrs, TensorView &x_backprop, TensorView &scale_backprop,
                                TensorView &offset_backprop) {
    fbngrad_attrs a;
    a.epsilon = attrs.epsilon;
    a.is_training = attrs.is_training ? 1 : 0;
    a.reserve_space_2_is = static_cast<fbngrad_reserve_space_2_is>(attrs.reserve_space_2_is);
    fbngrad_status s;
    fbngrad_split_phase_apply(y_backprop.c(), x.c(), scale.c(), reserve_space_1.c(), reserve_space_2.c(),
                              sum_dy.c(), sum_dyxc.c(), count, &a, x_backprop.c(), scale_backprop.c(),
                              offset_backprop.c(), &s);
    return Status(s);
}

// ---- CUDA (fbngrad.h): TensorViews .on(Device::CUDA) hold device pointers ----
inline bool cuda_available() { return fbngrad_cuda_available() != 0; }
inline std::string cuda_unavailable_reason() { return fbngrad_cuda_unavailable_reason(); }
// The CUcontext / CUstream later CUDA calls use; nullptr restores the default.
inline void set_cuda_context(void *cu_context, void *cu_stream) { fbngrad_set_cuda_context(cu_context, cu_stream); }

// Restricts CPU dispatch to one ISA; "" restores the automatic choice.
inline Status force_isa(const std::string &isa) {
    fbngrad_status s;
    fbngrad_force_isa(isa.c_str(), &s);
    return Status(s);
}

// Runs the named variant for every problem of its row; "" restores the automatic choice.
inline Status force_variant(const std::string &name) {
    fbngrad_status s;
    fbngrad_force_variant(name.c_str(), &s);
    return Status(s);
}

inline int set_num_threads(int n) { return fbngrad_set_num_threads(n); }

// The kept scratch memory given back to the system; the bytes it held.
inline int64_t release_scratch() { return fbngrad_release_scratch(); }

// ---- the caller's thread pool (fbngrad_set_parallel_for in fbngrad.h) ----
// A runner is any object with `int operator()(int32_t count, const Task &task)`
// that calls task(i) once for every i in [0, count) on any threads and returns
// 0 or the first non-zero result. An exception that escapes the runner fails
// the call (FBNGRAD_INTERNAL) instead of crossing the C API. While installed,
// the runner must stay alive: ScopedParallelFor keeps it installed for a scope
// (and restores fbngrad's own pool at its end, after the calls using it returned).
class Task {
public:
    Task(fbngrad_task_fn fn, void *ctx) : fn_(fn), ctx_(ctx) {}
    int operator()(int32_t index) const { return fn_(ctx_, index); }

private:
    fbngrad_task_fn fn_;
    void *ctx_;
};

template <typename Runner>
void set_parallel_for(Runner *runner) {
    if (!runner) {
        fbngrad_set_parallel_for(nullptr, nullptr);
        return;
    }
    fbngrad_set_parallel_for(
        [](void *runner_ctx, int32_t count, fbngrad_task_fn fn, void *task_ctx) -> int {
            try {
                return (*static_cast<Runner *>(runner_ctx))(count, Task(fn, task_ctx));
            } catch (...) {
                return -1;
            }
        },
        runner);
}

inline void reset_parallel_for() { fbngrad_set_parallel_for(nullptr, nullptr); }

template <typename Runner>
class ScopedParallelFor {
public:
    explicit ScopedParallelFor(Runner &runner) { set_parallel_for(&runner); }
    ~ScopedParallelFor() { reset_parallel_for(); }
    ScopedParallelFor(const ScopedParallelFor &) = delete;
    ScopedParallelFor &operator=(const ScopedParallelFor &) = delete;
};

inline std::vector<fbngrad_variant_info> variants() {
    std::vector<fbngrad_variant_info> out;
    for (int32_t i = 0; i < fbngrad_variant_count(); ++i) out.push_back(*fbngrad_variant(i));
    return out;
}

// The name of the variant the dispatcher would use, or "" when none can run here.
inline std::string selected_variant(DType dtype, Layout layout, bool is_training, Device device = Device::CPU) {
    const fbngrad_variant_info *v =
        fbngrad_selected_variant(static_cast<fbngrad_dtype>(dtype), static_cast<fbngrad_layout>(layout),
                                 is_training ? 1 : 0, static_cast<fbngrad_device>(device));
    return v ? v->name : "";
}

// The same for x of this shape (rank 4 or 5, in the layout's order): a tuned variant where
// one serves the shape's class; "" when none can run here or the shape is not valid.
inline std::string selected_variant(DType dtype, Layout layout, bool is_training, const std::vector<int64_t> &shape,
                                    Device device = Device::CPU) {
    const fbngrad_variant_info *v = fbngrad_selected_variant_for_shape(
        static_cast<fbngrad_dtype>(dtype), static_cast<fbngrad_layout>(layout), is_training ? 1 : 0,
        static_cast<fbngrad_device>(device), int32_t(shape.size()), shape.data());
    return v ? v->name : "";
}

}  // namespace fbngrad

#endif  // FBNGRAD_FBNGRAD_HPP
