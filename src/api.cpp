// The C API: validation, the zero-element case, the call into the chosen
// Halide variant, and the plumbing of its errors into fbngrad_status.
#include <algorithm>
#include <cstring>
#include <string>

#include "dispatch.h"
#include "fbngrad/fbngrad.h"
#include "halide_glue.h"
#include "validate.h"

using namespace fbngrad;

namespace {

fbngrad_code set_status(fbngrad_status *status, fbngrad_code code, const std::string &msg) {
    if (status) {
        status->code = code;
        size_t n = std::min(msg.size(), size_t(FBNGRAD_MESSAGE_CAPACITY - 1));
        std::memcpy(status->message, msg.data(), n);
        status->message[n] = '\0';
    }
    return code;
}

halide_type_t halide_type(fbngrad_dtype d) {
    switch (d) {
    case FBNGRAD_FLOAT16: return halide_type_t(halide_type_float, 16);
    case FBNGRAD_BFLOAT16: return halide_type_t(halide_type_uint, 16);  // raw bits; see generators/dtype.h
    default: return halide_type_t(halide_type_float, 32);
    }
}

// The kernels' 3-D view (see generators/algorithm.h): NHWC as (c, s*n, 1), NCHW as (s, c, n).
struct Tensor3 {
    halide_dimension_t dim[3];
    halide_buffer_t buf;
    Tensor3(void *data, halide_type_t type, const CheckedProblem &p) : dim{}, buf{} {
        const int32_t C = int32_t(p.C), S = int32_t(p.S), N = int32_t(p.N);
        if (p.layout == FBNGRAD_NHWC) {
            dim[0] = halide_dimension_t(0, C, 1);
            dim[1] = halide_dimension_t(0, S * N, C);
            dim[2] = halide_dimension_t(0, 1, S * N * C);
        } else {
            dim[0] = halide_dimension_t(0, S, 1);
            dim[1] = halide_dimension_t(0, C, S);
            dim[2] = halide_dimension_t(0, N, S * C);
        }
        init(data, type, 3);
    }
    Tensor3(void *data, int32_t C) : dim{}, buf{} {
        dim[0] = halide_dimension_t(0, C, 1);
        init(data, halide_type_t(halide_type_float, 32), 1);
    }
    void init(void *data, halide_type_t type, int dims) {
        buf.host = static_cast<uint8_t *>(data);
        buf.type = type;
        buf.dimensions = dims;
        buf.dim = dim;
    }
    Tensor3(const Tensor3 &) = delete;
};

}  // namespace

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

        // TensorFlow returns before choosing a kernel when x is empty.
        if (p.elements == 0) {
            std::fill_n(static_cast<float *>(scale_backprop->data), p.C, 0.0f);
            std::fill_n(static_cast<float *>(offset_backprop->data), p.C, 0.0f);
            return set_status(status, FBNGRAD_OK, "");
        }

        const Variant *v = select_variant(p.dtype, p.layout, a.is_training != 0, p.device, &msg);
        if (!v) return set_status(status, FBNGRAD_NOT_FOUND, msg);

        runtime::install_halide_handlers();
        const halide_type_t T = halide_type(p.dtype);
        const int32_t C = int32_t(p.C);
        Tensor3 dy(y_backprop->data, T, p), xx(x->data, T, p), xb(x_backprop->data, T, p);
        Tensor3 sc(scale->data, C), mean(reserve_space_1->data, C), rs2(reserve_space_2->data, C);
        Tensor3 sb(scale_backprop->data, C), ob(offset_backprop->data, C);
        runtime::CallContext ctx;
        int rc = v->fn(&ctx, &dy.buf, &xx.buf, &sc.buf, &mean.buf, &rs2.buf, a.epsilon,
                       a.reserve_space_2_is == FBNGRAD_RS2_INVERSE_STD, &xb.buf, &sb.buf, &ob.buf);
        if (rc != 0)
            return set_status(status, FBNGRAD_INTERNAL,
                              std::string(v->info.name) + " failed (Halide error " + std::to_string(rc) +
                                  "): " + (ctx.error.empty() ? "no message" : ctx.error));
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
    std::string why;
    const Variant *v = select_variant(dtype, layout, is_training != 0, device, &why);
    return v ? &v->info : nullptr;
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

#define FBNGRAD_STR2(x) #x
#define FBNGRAD_STR(x) FBNGRAD_STR2(x)
const char *fbngrad_version(void) {
    return FBNGRAD_STR(FBNGRAD_VERSION_MAJOR) "." FBNGRAD_STR(FBNGRAD_VERSION_MINOR) "." FBNGRAD_STR(FBNGRAD_VERSION_PATCH);
}

}  // extern "C"
