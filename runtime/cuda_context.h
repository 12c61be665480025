// How a kernel call meets the caller's CUDA state: which context and stream
// Halide's CUDA runtime uses (its acquire_context / release_context /
// get_stream hooks, HalideRuntimeCuda.h), and the halide_buffer_t views of the
// caller's device memory.
//
// The context of a call, in this order: the one given to
// fbngrad_set_cuda_context; else the context current on the calling thread
// (what the CUDA runtime API, PyTorch or cuDNN made current); else the primary
// context of device 0 (the one cudaMalloc allocates in). The stream: the one
// given to fbngrad_set_cuda_context, else the default stream (0). A call takes
// both when it starts, so a later fbngrad_set_cuda_context never changes a call
// that is running. No lock is held: CUDA contexts may be current on several
// threads at once, and calls on one stream run in order.
#pragma once

#include <cstddef>
#include <string>

#include "HalideRuntime.h"
#include "halide_glue.h"

namespace fbngrad::runtime {

// Process-wide; nullptr for either restores the automatic choice above.
void set_cuda_context(void *cu_context, void *cu_stream);

// Installs the Halide hooks (once) and fills ctx->cuda_context/cuda_stream.
// false with *error set when no context can be had.
bool prepare_cuda_call(CallContext *ctx, std::string *error);

// b->host holds the caller's device pointer: make it a device buffer of
// Halide's CUDA interface (.device = the pointer, .host = nullptr), without
// copying anything. Its contents are the device's (device_dirty).
void make_device_buffer(halide_buffer_t *b);

// n float32 zeros at device address ptr, on the call's stream; "" or the error.
std::string zero_device_floats(const CallContext &ctx, void *ptr, size_t n);

// Zeroed device memory of the call's own, in the call's context, for kernels
// the call launches on its stream. Freed when this goes out of scope, after
// that stream has finished (so the destructor waits for it): for rare paths
// only. data() is nullptr, and error() says why, when it could not be had.
class DeviceScratch {
public:
    DeviceScratch(const CallContext &ctx, size_t bytes);
    ~DeviceScratch();
    DeviceScratch(const DeviceScratch &) = delete;
    DeviceScratch &operator=(const DeviceScratch &) = delete;
    void *data() const { return ptr_; }
    const std::string &error() const { return error_; }

private:
    const CallContext &ctx_;
    void *ptr_ = nullptr;
    std::string error_;
};

}  // namespace fbngrad::runtime
