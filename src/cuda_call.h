// The CUDA side of an API call, shared by the fused op (api.cpp) and the split
// phase (split_phase_api.cpp): the checks before a call on CUDA tensors, the
// zeros of the empty cases, the device views of the caller's pointers (used
// in place, on the call's context and stream: runtime/cuda_context.h), and
// the status of a failed kernel.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "cuda_availability.h"
#include "cuda_context.h"
#include "halide_glue.h"
#include "kernel_args.h"

namespace fbngrad {

// For CUDA tensors: FBNGRAD_UNAVAILABLE without a usable device, FBNGRAD_INTERNAL
// without a context; FBNGRAD_OK (status untouched) once ctx holds the call's
// context and stream. For CPU tensors: FBNGRAD_OK, nothing done.
inline fbngrad_code begin_call(bool on_cuda, runtime::CallContext *ctx, fbngrad_status *status) {
    if (!on_cuda) return FBNGRAD_OK;
    if (!runtime::cuda_available()) return set_status(status, FBNGRAD_UNAVAILABLE, runtime::kNoCudaDevice);
    std::string msg;
    if (!runtime::prepare_cuda_call(ctx, &msg))
        return set_status(status, FBNGRAD_INTERNAL, "no CUDA context for the call: " + msg);
    return FBNGRAD_OK;
}

// C float32 zeros in each of `outs` (host or device memory): "" or the error.
inline std::string zero_channels(bool on_cuda, const runtime::CallContext &ctx, int64_t C,
                                 std::initializer_list<void *> outs) {
    if (C == 0) return "";
    for (void *p : outs) {
        if (!on_cuda) {
            std::fill_n(static_cast<float *>(p), C, 0.0f);
            continue;
        }
        std::string err = runtime::zero_device_floats(ctx, p, size_t(C));
        if (!err.empty()) return err;
    }
    return "";
}

// The kernel's views of CUDA tensors become device buffers (nothing copied).
inline void on_device(bool on_cuda, std::initializer_list<Tensor3 *> ts) {
    if (on_cuda)
        for (Tensor3 *t : ts) runtime::make_device_buffer(&t->buf);
}

inline fbngrad_code kernel_failed(fbngrad_status *status, const char *name, int rc, const runtime::CallContext &ctx) {
    return set_status(status, FBNGRAD_INTERNAL,
                      std::string(name) + " failed (Halide error " + std::to_string(rc) +
                          "): " + (ctx.error.empty() ? "no message" : ctx.error));
}

}  // namespace fbngrad
