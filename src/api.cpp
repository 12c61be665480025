// The C API: validation, the zero-element case, the call into the chosen
// Halide variant, and the plumbing of its errors into fbngrad_status.
#include <algorithm>
#include <cstring>
#include <string>

#include "cuda_availability.h"
#include "cuda_call.h"
#include "cuda_context.h"
#include "dispatch.h"
#include "fbngrad/fbngrad.h"
#include "halide_glue.h"
#include "kernel_args.h"
#include "scratch_memory.h"
#include "two_pass_route.h"
#include "validate.h"

using namespace fbngrad;

extern "C" {

void fbngrad_attrs_init(fbngrad_attrs *attrs) {
    if (!attrs) return;
    attrs->epsilon = 0.0001f;
    attrs->is_training = 1;
    attrs->reserve_space_2_is = FBNGRAD_RS2_VARIANCE;
}

fbngrad_tensor fbngrad_make_tensor(void *data, fbngrad_dtype dtype, int32_t rank, const int64_t *shape,
                                   fbngrad_layout layout) {
    fbngrad_tensor t;
    std::memset(&t, 0, sizeof t);
    t.data = data;
    t.dtype = dtype;
    t.rank = rank;
    for (int32_t d = 0; shape && d < rank && d < FBNGRAD_MAX_RANK; ++d) t.shape[d] = shape[d];
    t.layout = layout;
    t.device = FBNGRAD_CPU;
    return t;
}

fbngrad_code fbngrad_fused_batch_norm_grad_v2(const fbngrad_tensor *y_backprop, const fbngrad_tensor *x,
                                              const fbngrad_tensor *scale, const fbngrad_tensor *reserve_space_1,
                                              const fbngrad_tensor *reserve_space_2, const fbngrad_attrs *attrs,
                                              fbngrad_tensor *x_backprop, fbngrad_tensor *scale_backprop,
                                              fbngrad_tensor *offset_backprop, fbngrad_status *status) {
    try {
        fbngrad_attrs a;
        fbngrad_attrs_init(&a);
        if (attrs) a = *attrs;

        CheckedProblem p;
        std::string msg;
        fbngrad_code code = validate(y_backprop, x, scale, reserve_space_1, reserve_space_2, a, x_backprop,
                                     scale_backprop, offset_backprop, &p, &msg);
        if (code != FBNGRAD_OK) return set_status(status, code, msg);

        // CUDA tensors: the caller's device pointers, used in place, in the
        // call's context and stream (runtime/cuda_context.h).
        const bool on_cuda = p.device == FBNGRAD_CUDA;
        runtime::CallContext ctx;
        code = begin_call(on_cuda, &ctx, status);
        if (code != FBNGRAD_OK) return code;
        ctx.elements = p.elements;

        // TensorFlow returns before choosing a kernel when x is empty.
        if (p.elements == 0) {
            msg = zero_channels(on_cuda, ctx, p.C, {scale_backprop->data, offset_backprop->data});
            return msg.empty() ? set_status(status, FBNGRAD_OK, "") : set_status(status, FBNGRAD_INTERNAL, msg);
        }

        const ShapeClass k = shape_class_of(p);
        fbngrad_code why = FBNGRAD_NOT_FOUND;  // FBNGRAD_UNIMPLEMENTED: left out of this build (dispatch.h)
        const Variant *v = select_variant(p.dtype, p.layout, a.is_training != 0, p.device, &msg, &k, &why);
        if (!v) return set_status(status, why, msg);

        runtime::install_halide_handlers();
        if (!on_cuda) ctx.use_thread_scratch();
        const halide_type_t T = halide_type(p.dtype);
        const int32_t C = int32_t(p.C);
        Tensor3 dy(y_backprop->data, T, p), xx(x->data, T, p), xb(x_backprop->data, T, p);
        Tensor3 sc(scale->data, C), mean(reserve_space_1->data, C), rs2(reserve_space_2->data, C);
        Tensor3 sb(scale_backprop->data, C), ob(offset_backprop->data, C);
        on_device(on_cuda, {&dy, &xx, &xb, &sc, &mean, &rs2, &sb, &ob});
        const bool inverse_std = a.reserve_space_2_is == FBNGRAD_RS2_INVERSE_STD;
        const char *kernel = v->info.name;
        int rc;
        if (v->two_pass && takes_two_passes(ctx, p.N, p.S, p.elements))
            rc = run_two_passes(*v->two_pass, &ctx, C, p.S * p.N, &dy.buf, &xx.buf, &sc.buf, &mean.buf, &rs2.buf,
                                a.epsilon, inverse_std, &xb.buf, &sb.buf, &ob.buf, &kernel);
        else
            rc = v->fn(&ctx, &dy.buf, &xx.buf, &sc.buf, &mean.buf, &rs2.buf, a.epsilon, inverse_std, &xb.buf,
                       &sb.buf, &ob.buf);
        if (rc != 0) return kernel_failed(status, kernel, rc, ctx);
        return set_status(status, FBNGRAD_OK, "");
    } catch (const std::exception &e) {  // e.g. std::bad_alloc: never across the C API
        return set_status(status, FBNGRAD_INTERNAL, std::string("internal error: ") + e.what());
    } catch (...) {
        return set_status(status, FBNGRAD_INTERNAL, "internal error");
    }
}

int32_t fbngrad_variant_count(void) { return variant_count(); }

const fbngrad_variant_info *fbngrad_variant(int32_t i) {
    if (i < 0 || i >= variant_count()) return nullptr;
    return &variant(i).info;
}

const fbngrad_variant_info *fbngrad_selected_variant(fbngrad_dtype dtype, fbngrad_layout layout,
                                                     int32_t is_training, fbngrad_device device) {
    // A C caller may pass any int (validate.h, enum_bits): values outside the enums have no variant.
    if (!valid_dtype(enum_bits(dtype)) || !valid_layout(enum_bits(layout)) ||
        (enum_bits(device) != FBNGRAD_CPU && enum_bits(device) != FBNGRAD_CUDA))
        return nullptr;
    std::string why;
    const Variant *v = select_variant(dtype, layout, is_training != 0, device, &why);
    return v ? &v->info : nullptr;
}

const fbngrad_variant_info *fbngrad_selected_variant_for_shape(fbngrad_dtype dtype, fbngrad_layout layout,
                                                               int32_t is_training, fbngrad_device device,
                                                               int32_t rank, const int64_t *shape) {
    if (!valid_dtype(enum_bits(dtype)) || !valid_layout(enum_bits(layout)) ||
        (enum_bits(device) != FBNGRAD_CPU && enum_bits(device) != FBNGRAD_CUDA) || (rank != 4 && rank != 5) ||
        !shape)
        return nullptr;
    fbngrad_tensor x{};
    x.dtype = dtype;
    x.layout = layout;
    x.device = device;
    x.rank = rank;
    for (int d = 0; d < rank; ++d) {
        if (shape[d] < 0) return nullptr;
        x.shape[d] = shape[d];
    }
    const ShapeClass k = shape_class_of(problem_of(x));
    std::string why;
    const Variant *v = select_variant(dtype, layout, is_training != 0, device, &why, &k);
    return v ? &v->info : nullptr;
}

fbngrad_code fbngrad_force_variant(const char *name, fbngrad_status *status) {
    std::string msg;
    if (!force_variant(name ? name : "", &msg)) return set_status(status, FBNGRAD_INVALID_ARGUMENT, msg);
    return set_status(status, FBNGRAD_OK, "");
}

fbngrad_code fbngrad_force_isa(const char *isa, fbngrad_status *status) {
    std::string msg;
    if (!force_isa(isa ? isa : "", &msg)) return set_status(status, FBNGRAD_INVALID_ARGUMENT, msg);
    return set_status(status, FBNGRAD_OK, "");
}

const char *fbngrad_forced_isa(void) { return forced_isa_name(); }

const char *fbngrad_cpu_features(void) {
    static const std::string s = cpu_features().describe();
    return s.c_str();
}

int32_t fbngrad_set_num_threads(int32_t n) { return runtime::set_num_threads(n); }

int64_t fbngrad_release_scratch(void) { return int64_t(runtime::release_scratch()); }

void fbngrad_set_parallel_for(fbngrad_parallel_for_fn fn, void *runner_ctx) {
    runtime::set_parallel_for(fn, runner_ctx);
}

int32_t fbngrad_cuda_available(void) { return runtime::cuda_available() ? 1 : 0; }

const char *fbngrad_cuda_unavailable_reason(void) { return runtime::cuda_unavailable_reason().c_str(); }

void fbngrad_set_cuda_context(void *cu_context, void *cu_stream) { runtime::set_cuda_context(cu_context, cu_stream); }

#define FBNGRAD_STR2(x) #x
#define FBNGRAD_STR(x) FBNGRAD_STR2(x)
const char *fbngrad_version(void) {
    return FBNGRAD_STR(FBNGRAD_VERSION_MAJOR) "." FBNGRAD_STR(FBNGRAD_VERSION_MINOR) "." FBNGRAD_STR(FBNGRAD_VERSION_PATCH);
}

}  // extern "C"
