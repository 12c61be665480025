// libfbngrad_tf.so: fbngrad as TensorFlow's CPU kernel for FusedBatchNormGradV2 and
// FusedBatchNormGradV3 (T in {float, half, bfloat16}, U = float), registered above TensorFlow's
// own priority, and the op FbngradFusedBatchNormGrad (fbngrad.tensorflow.fused_batch_norm's
// gradient). TensorFlow's stable C API only (tensorflow/c/kernels.h, ops.h) and fbngrad's public
// header. docs/tensorflow.md says what runs where.
//
// What the kernels for V2/V3 reproduce of TensorFlow's CPU kernel (FusedBatchNormGradOpBase,
// ../../shared/spec/semantics-research.md §3): the validation order and messages (fbngrad's own,
// which are TensorFlow's), reserve_space_2 as the variance, V3's reserve_space_3 ignored, the
// outputs reserve_space_3/4 of shape [0], an empty 5-D x_backprop in the merged 4-D shape, and
// the rejection of is_training=false in NCHW/NCDHW after every other check (an empty input
// still succeeds).
#include <dlfcn.h>
#include <strings.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "fbngrad/fbngrad.h"
#include "tensorflow/c/kernels.h"
#include "tensorflow/c/ops.h"
#include "tensorflow/c/tf_datatype.h"
#include "tensorflow/c/tf_status.h"
#include "tensorflow/c/tf_tensor.h"

#define FBNGRAD_TF_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

enum Op { kV2 = 0, kV3 = 1, kFbngrad = 2, kOps = 3 };
const char *const kOpNames[kOps] = {"FusedBatchNormGradV2", "FusedBatchNormGradV3", "FbngradFusedBatchNormGrad"};

std::atomic<long long> g_served[kOps];  // calls that fbngrad computed, per op
std::atomic<long long> g_errors;        // calls that ended in an error status

struct Kernel {
    Op op;
    float epsilon;
    bool is_training;
    bool channels_first;
};

// RAII for the C API's handles.
struct Status {
    TF_Status *s = TF_NewStatus();
    ~Status() { TF_DeleteStatus(s); }
    bool ok() const { return TF_GetCode(s) == TF_OK; }
};
struct Tensor {
    TF_Tensor *t = nullptr;
    ~Tensor() {
        if (t) TF_DeleteTensor(t);
    }
};

std::string shape_string(TF_Tensor *t) {  // TensorShape::DebugString: [2,3,4]
    std::string s = "[";
    for (int i = 0; i < TF_NumDims(t); ++i) s += (i ? "," : "") + std::to_string(TF_Dim(t, i));
    return s + "]";
}

fbngrad_dtype to_fbngrad(TF_DataType t) {
    return t == TF_HALF ? FBNGRAD_FLOAT16 : t == TF_BFLOAT16 ? FBNGRAD_BFLOAT16 : FBNGRAD_FLOAT32;
}

fbngrad_tensor view(TF_Tensor *t, fbngrad_layout layout) {
    fbngrad_tensor v{};
    v.data = TF_TensorData(t);
    v.dtype = to_fbngrad(TF_TensorType(t));
    v.rank = TF_NumDims(t);
    for (int i = 0; i < v.rank; ++i) v.shape[i] = TF_Dim(t, i);
    v.layout = layout;
    v.device = FBNGRAD_CPU;
    return v;
}

void fail(TF_OpKernelContext *ctx, TF_Code code, const std::string &message) {
    Status st;
    TF_SetStatus(st.s, code, message.c_str());
    TF_OpKernelContext_Failure(ctx, st.s);
    g_errors.fetch_add(1, std::memory_order_relaxed);
}

template <Op op>
void *create(TF_OpKernelConstruction *ctx) {
    Status st;
    auto *k = new Kernel{op, 1e-4f, true, false};
    TF_OpKernelConstruction_GetAttrFloat(ctx, "epsilon", &k->epsilon, st.s);
    char format[8] = {0};
    if (st.ok()) TF_OpKernelConstruction_GetAttrString(ctx, "data_format", format, sizeof format - 1, st.s);
    TF_Bool training = 1;
    if (st.ok()) TF_OpKernelConstruction_GetAttrBool(ctx, "is_training", &training, st.s);
    if (!st.ok()) {
        TF_OpKernelConstruction_Failure(ctx, st.s);
        return k;
    }
    k->is_training = training != 0;
    // The op's attribute allows NHWC, NCHW, NDHWC and NCDHW only; "C" second is channels-first.
    k->channels_first = format[1] == 'C';
    return k;
}

void destroy(void *kernel) { delete static_cast<Kernel *>(kernel); }

// TensorFlow's first failing rank check (steps 3-7 of its validation) for ranks fbngrad's views
// cannot hold (> FBNGRAD_MAX_RANK); "" when every rank fits.
std::string rank_error(TF_Tensor *const in[5]) {
    static const char *const what[5] = {"input must be 4 or 5-dimensional", "input must be 4 or 5-dimensional",
                                        "scale must be 1-dimensional", "saved mean must be 1-dimensional",
                                        "saved variance must be 1-dimensional"};
    bool too_big = false;
    for (int i = 0; i < 5; ++i) too_big |= TF_NumDims(in[i]) > FBNGRAD_MAX_RANK;
    if (!too_big) return "";
    for (int i = 0; i < 5; ++i) {
        const int r = TF_NumDims(in[i]);
        const bool ok = i < 2 ? (r == 4 || r == 5) : r == 1;
        if (!ok) return std::string(what[i]) + shape_string(in[i]);
    }
    return "";
}

void compute(void *kernel, TF_OpKernelContext *ctx) {
    const Kernel &k = *static_cast<Kernel *>(kernel);
    Status st;
    Tensor in[5];  // y_backprop, x, scale, reserve_space_1, reserve_space_2 (V3's reserve_space_3: unused)
    for (int i = 0; i < 5; ++i) {
        TF_GetInput(ctx, i, &in[i].t, st.s);
        if (!st.ok()) {
            TF_OpKernelContext_Failure(ctx, st.s);
            g_errors.fetch_add(1, std::memory_order_relaxed);
            return;
        }
    }
    TF_Tensor *const raw[5] = {in[0].t, in[1].t, in[2].t, in[3].t, in[4].t};
    const std::string bad_rank = rank_error(raw);
    if (!bad_rank.empty()) return fail(ctx, TF_INVALID_ARGUMENT, bad_rank);

    const fbngrad_layout layout = k.channels_first ? FBNGRAD_NCHW : FBNGRAD_NHWC;
    TF_Tensor *x = in[1].t;
    const int rank = TF_NumDims(x);
    int64_t x_shape[FBNGRAD_MAX_RANK];
    int out_rank = rank;
    for (int i = 0; i < rank; ++i) x_shape[i] = TF_Dim(x, i);
    // TensorFlow's CPU kernel returns early for an empty 5-D input, before it reshapes x_backprop
    // back from its merged 4-D form: [N,D,H*W,C] (channels-last) or [N,C,D,H*W] (channels-first).
    if (k.op != kFbngrad && rank == 5 && TF_TensorElementCount(x) == 0) {
        if (k.channels_first) {
            x_shape[3] = TF_Dim(x, 3) * TF_Dim(x, 4);
        } else {
            x_shape[2] = TF_Dim(x, 2) * TF_Dim(x, 3);
            x_shape[3] = TF_Dim(x, 4);
        }
        out_rank = 4;
    }

    Tensor out[5];  // x_backprop, scale_backprop, offset_backprop (, reserve_space_3/4 or 4/5: [0])
    const TF_DataType t = TF_TensorType(x);
    const size_t t_size = TF_DataTypeSize(t);
    out[0].t = TF_AllocateOutput(ctx, 0, t, x_shape, out_rank, TF_TensorElementCount(x) * t_size, st.s);
    TF_Tensor *scale = in[2].t;
    int64_t scale_shape[FBNGRAD_MAX_RANK];
    for (int i = 0; i < TF_NumDims(scale); ++i) scale_shape[i] = TF_Dim(scale, i);
    for (int o = 1; o <= 2 && st.ok(); ++o)
        out[o].t = TF_AllocateOutput(ctx, o, TF_FLOAT, scale_shape, TF_NumDims(scale),
                                     TF_TensorElementCount(scale) * sizeof(float), st.s);
    const int64_t zero[1] = {0};
    for (int o = 3; o <= 4 && st.ok() && k.op != kFbngrad; ++o)
        out[o].t = TF_AllocateOutput(ctx, o, TF_FLOAT, zero, 1, 0, st.s);
    if (!st.ok()) {
        TF_OpKernelContext_Failure(ctx, st.s);
        g_errors.fetch_add(1, std::memory_order_relaxed);
        return;
    }

    fbngrad_tensor dy = view(in[0].t, layout), xv = view(x, layout), sc = view(scale, layout),
                   m = view(in[3].t, layout), v = view(in[4].t, layout);
    fbngrad_tensor dx = xv, dscale = view(out[1].t, layout), doffset = view(out[2].t, layout);
    dx.data = TF_TensorData(out[0].t);  // x's view: an empty 5-D x_backprop's 4-D shape holds no data
    fbngrad_attrs attrs;
    fbngrad_attrs_init(&attrs);
    attrs.epsilon = k.epsilon;
    attrs.is_training = k.is_training ? 1 : 0;
    attrs.reserve_space_2_is = FBNGRAD_RS2_VARIANCE;  // TensorFlow's CPU convention
    fbngrad_status status;
    if (fbngrad_fused_batch_norm_grad_v2(&dy, &xv, &sc, &m, &v, &attrs, &dx, &dscale, &doffset, &status) != FBNGRAD_OK)
        return fail(ctx, static_cast<TF_Code>(status.code), status.message);
    // TensorFlow's Eigen kernel: inference only in channels-last, checked after everything else
    // and after its early return for empty inputs. fbngrad computes it; FbngradFusedBatchNormGrad
    // keeps the result, the kernels for TensorFlow's ops give TensorFlow's error.
    if (k.op != kFbngrad && !k.is_training && k.channels_first && TF_TensorElementCount(x) != 0)
        return fail(ctx, TF_INVALID_ARGUMENT,
                    "The implementation of FusedBatchNormGrad with is_training=False only support NHWC "
                    "tensor format for now.");
    g_served[k.op].fetch_add(1, std::memory_order_relaxed);
}

void check(const Status &st, const char *what) {
    if (!st.ok()) std::fprintf(stderr, "fbngrad: registering %s failed: %s\n", what, TF_Message(st.s));
}

void shape_fn(TF_ShapeInferenceContext *ctx, TF_Status *status) {
    // x_backprop: x's shape; scale_backprop, offset_backprop: scale's shape.
    for (int out = 0; out < 3; ++out) {
        TF_ShapeHandle *h = TF_NewShapeHandle();
        TF_ShapeInferenceContextGetInput(ctx, out == 0 ? 1 : 2, h, status);
        if (TF_GetCode(status) == TF_OK) TF_ShapeInferenceContextSetOutput(ctx, out, h, status);
        TF_DeleteShapeHandle(h);
        if (TF_GetCode(status) != TF_OK) return;
    }
}

void register_op() {
    Status st;
    TF_OpDefinitionBuilder *b = TF_NewOpDefinitionBuilder(kOpNames[kFbngrad]);
    for (const char *in : {"y_backprop: T", "x: T", "scale: float", "reserve_space_1: U", "reserve_space_2: U"})
        TF_OpDefinitionBuilderAddInput(b, in);
    for (const char *out : {"x_backprop: T", "scale_backprop: U", "offset_backprop: U"})
        TF_OpDefinitionBuilderAddOutput(b, out);
    for (const char *attr : {"T: {half, bfloat16, float}", "U: {float}", "epsilon: float = 0.0001",
                             "data_format: {'NHWC', 'NCHW', 'NDHWC', 'NCDHW'} = 'NHWC'", "is_training: bool = true"})
        TF_OpDefinitionBuilderAddAttr(b, attr);
    TF_OpDefinitionBuilderSetShapeInferenceFunction(b, shape_fn);
    TF_RegisterOpDefinition(b, st.s);  // takes ownership of b
    check(st, kOpNames[kFbngrad]);
}

template <Op op>
void register_kernels(int priority) {
    const TF_DataType types[3] = {TF_FLOAT, TF_HALF, TF_BFLOAT16};
    const char *const type_names[3] = {"float", "half", "bfloat16"};
    for (int i = 0; i < 3; ++i) {
        Status st;
        TF_KernelBuilder *b = TF_NewKernelBuilder(kOpNames[op], "CPU", &create<op>, &compute, &destroy);
        TF_KernelBuilder_TypeConstraint(b, "T", types[i], st.s);
        if (st.ok()) TF_KernelBuilder_TypeConstraint(b, "U", TF_FLOAT, st.s);
        if (st.ok() && priority) TF_KernelBuilder_Priority(b, priority);
        const std::string name = std::string("Fbngrad") + kOpNames[op] + "_" + type_names[i];
        if (st.ok()) TF_RegisterKernelBuilder(name.c_str(), b, st.s);  // takes ownership of b
        else TF_DeleteKernelBuilder(b);
        check(st, name.c_str());
    }
}

// Whether TensorFlow's oneDNN graph rewriting is on in this process: TensorFlow's own answer,
// tensorflow::IsMKLEnabled() (a plain bool() function of libtensorflow_framework), looked up at
// run time so that no C++ symbol is linked; where it is missing, TF_ENABLE_ONEDNN_OPTS alone.
int onednn_active() {
    using fn = bool (*)();
    if (auto f = reinterpret_cast<fn>(dlsym(RTLD_DEFAULT, "_ZN10tensorflow12IsMKLEnabledEv"))) return f() ? 1 : 0;
    const char *e = std::getenv("TF_ENABLE_ONEDNN_OPTS");
    if (!e) return -1;  // unknown: TensorFlow decides by the CPU
    return (!std::strcmp(e, "1") || !strcasecmp(e, "true")) ? 1 : 0;
}

// TensorFlow's own kernels have priority 0.
constexpr int kPriority = 1;

struct Registration {
    Registration() {
        register_op();
        register_kernels<kV2>(kPriority);
        register_kernels<kV3>(kPriority);
        register_kernels<kFbngrad>(0);
        if (onednn_active() == 1)
            std::fprintf(stderr,
                         "fbngrad: TensorFlow's oneDNN optimizations are on: TensorFlow rewrites FusedBatchNormGradV2/V3 "
                         "(4-D float32 always, bfloat16 and float16 where the CPU has oneDNN's support for them) to its "
                         "_MklNative oneDNN kernels, and fbngrad's kernels do not run for those. Set TF_ENABLE_ONEDNN_OPTS=0 "
                         "before TensorFlow starts, or use fbngrad.tensorflow.fused_batch_norm, whose gradient is "
                         "fbngrad's whatever the setting.\n");
    }
} registration;

}  // namespace

// For fbngrad.tensorflow (ctypes): what fbngrad served in this process.
// which: 0 FusedBatchNormGradV2, 1 FusedBatchNormGradV3, 2 FbngradFusedBatchNormGrad, -1 all three.
FBNGRAD_TF_EXPORT long long fbngrad_tf_calls_served(int which) {
    if (which >= 0 && which < kOps) return g_served[which].load();
    long long n = 0;
    for (auto &c : g_served) n += c.load();
    return n;
}
FBNGRAD_TF_EXPORT long long fbngrad_tf_calls_failed(void) { return g_errors.load(); }
FBNGRAD_TF_EXPORT void fbngrad_tf_reset_calls(void) {
    for (auto &c : g_served) c.store(0);
    g_errors.store(0);
}
// 1: oneDNN rewriting is on, 0: off, -1: unknown.
FBNGRAD_TF_EXPORT int fbngrad_tf_onednn_active(void) { return onednn_active(); }
// fbngrad's worker threads (fbngrad_set_num_threads): the C API gives a kernel no access to
// TensorFlow's intra-op pool, so fbngrad.tensorflow sizes fbngrad's own pool to its setting.
FBNGRAD_TF_EXPORT int fbngrad_tf_set_num_threads(int n) { return fbngrad_set_num_threads(n); }
