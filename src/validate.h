// Argument validation in TensorFlow's order and with TensorFlow's messages
// (shared/spec/semantics-research.md §3), then fbngrad's own checks of the
// caller-allocated outputs. Nothing here touches any data.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>

#include "fbngrad/fbngrad.h"
#include "shape_class.h"

namespace fbngrad {

// The problem as the kernels see it, once validation has passed.
struct CheckedProblem {
    fbngrad_dtype dtype;
    fbngrad_layout layout;
    fbngrad_device device;
    int64_t N, S, C;       // batch, merged spatial extent, channels
    int64_t elements;      // N * S * C
};

// The kernels' view of a validated x (dtype, layout, device and shape already
// checked): channels, batch and the merged spatial extent.
CheckedProblem problem_of(const fbngrad_tensor &x);

// The problem's shape class, for the dispatcher's choice among tuned schedules
// (CPU) and the single-pass rows (CUDA).
inline ShapeClass shape_class_of(const CheckedProblem &p) {
    const int bytes = p.dtype == FBNGRAD_FLOAT32 ? 4 : 2;
    if (p.device == FBNGRAD_CUDA) return classify_cuda_shape(p.layout == FBNGRAD_NCHW, p.C, p.N * p.S, bytes);
    return classify_shape(p.C, p.N * p.S, bytes);
}

// Largest tensor the 32-bit-indexed kernels accept: 2^31 - 2^16, not 2^31 - 1.
// Halide indexes with int32 and checks (the .stmt asserts) that extent * stride
// of every dimension is at most 2^31 - 1 elements, but a split loop's trip count
// is computed as (extent + factor - 1) / factor in int32 too: at 2^31 - 1
// elements that wraps, and x_backprop silently stayed unwritten
// (tests/test_large_tensors.cpp found it). 2^16 leaves room for any split
// factor (the schedules use up to 256).
constexpr int64_t kMaxElements = (int64_t(1) << 31) - (int64_t(1) << 16);  // 2147418112

// Largest per-channel scratch: the kernels keep float32 partial sums per
// channel (NHWC; with one per block of 256 rows) or per (n, c) plane (NCHW),
// and Halide refuses any buffer over 2^31 - 1 bytes (without large_buffers),
// failing mid-pipeline, possibly after x_backprop was written. So NHWC:
// C <= kMaxPlanes; NCHW: N*C <= kMaxPlanes. 2^29 floats minus room for the
// blocks (at most 2^31/256 = 2^23 of them).
constexpr int64_t kMaxPlanes = (int64_t(1) << 29) - (int64_t(1) << 24);  // 520093696

// The CUDA schedule's NCHW plane sums launch one block per (n, c) plane with
// the channel as blockIdx.y, whose grid dimension stops at 65535
// (generators/schedule_cuda.cpp, schedule_sums_nchw).
constexpr int64_t kMaxCudaNchwChannels = 65535;

// Returns FBNGRAD_OK and fills *out, or an error code with the message in *msg.
fbngrad_code validate(const fbngrad_tensor *y_backprop, const fbngrad_tensor *x, const fbngrad_tensor *scale,
                      const fbngrad_tensor *reserve_space_1, const fbngrad_tensor *reserve_space_2,
                      const fbngrad_attrs &attrs, const fbngrad_tensor *x_backprop,
                      const fbngrad_tensor *scale_backprop, const fbngrad_tensor *offset_backprop,
                      CheckedProblem *out, std::string *msg);

// The enum fields of the C API's structs hold whatever int a C caller stored
// there (valid C), but C++ must not load an out-of-range value as the enum
// type (undefined behaviour; UBSan's -fsanitize=enum reports it, and the
// fuzzer, tests/fuzz, found it). Fields not yet validated are read as bits.
template <class E>
inline int32_t enum_bits(const E &field) {
    static_assert(sizeof(E) == sizeof(int32_t), "the C API's enums are int-sized");
    int32_t v;
    std::memcpy(&v, &field, sizeof v);
    return v;
}

// The pieces of validate(), for the split phase's checks (validate_split_phase.cpp).
bool valid_dtype(int32_t d);   // enum_bits of a dtype field
bool valid_layout(int32_t l);  // enum_bits of a layout field
int64_t num_elements(const fbngrad_tensor &t);  // after check_view
bool same_shape(const fbngrad_tensor &a, const fbngrad_tensor &b);
// The view itself: rank 0 to 8, no negative dimension, at most kMaxElements elements.
// x (4-D or 5-D, valid layout): at most kMaxPlanes channels (NHWC) or N*C (NCHW);
// on CUDA, NCHW at most kMaxCudaNchwChannels channels.
fbngrad_code check_kernel_limits(const fbngrad_tensor &x, std::string *msg);
fbngrad_code check_view(const fbngrad_tensor &t, const char *name, std::string *msg);

// "[2,3,4]", as TensorShape::DebugString renders it.
std::string shape_string(const fbngrad_tensor &t);
const char *dtype_name(fbngrad_dtype d);  // "float", "half", "bfloat16" (TensorFlow's names)
const char *layout_name(int32_t l, int rank);  // l: enum_bits; "unknown" if invalid  // "NHWC", "NCDHW", ...

}  // namespace fbngrad
