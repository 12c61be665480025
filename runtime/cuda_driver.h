// The few CUDA driver API entry points fbngrad and its tools use, loaded from
// libcuda.so.1 with dlopen, never linked: the library, the CLI and the tests
// must load and run (and say "no CUDA device available") where there is no
// NVIDIA driver at all. The types are the driver's, spelled without cuda.h.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace fbngrad::cuda {

using CUresult = int;  // CUDA_SUCCESS == 0
using CUdevice = int;
using CUcontext = void *;
using CUstream = void *;
using CUevent = void *;
using CUdeviceptr = uint64_t;

// cuDeviceGetAttribute attributes used here (cuda.h's values).
constexpr int kAttrMultiprocessorCount = 16;
constexpr int kAttrMemoryClockRateKHz = 36;
constexpr int kAttrGlobalMemoryBusWidthBits = 37;
constexpr int kAttrComputeCapabilityMajor = 75;
constexpr int kAttrComputeCapabilityMinor = 76;

struct Driver {
    CUresult (*cuInit)(unsigned flags);
    CUresult (*cuDriverGetVersion)(int *version);
    CUresult (*cuDeviceGetCount)(int *count);
    CUresult (*cuDeviceGet)(CUdevice *device, int ordinal);
    CUresult (*cuDeviceGetName)(char *name, int len, CUdevice device);
    CUresult (*cuDeviceGetAttribute)(int *value, int attribute, CUdevice device);
    CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *ctx, CUdevice device);
    CUresult (*cuCtxGetCurrent)(CUcontext *ctx);
    CUresult (*cuCtxPushCurrent)(CUcontext ctx);
    CUresult (*cuCtxPopCurrent)(CUcontext *ctx);
    CUresult (*cuCtxSynchronize)();
    CUresult (*cuMemAlloc)(CUdeviceptr *ptr, size_t bytes);
    CUresult (*cuMemFree)(CUdeviceptr ptr);
    CUresult (*cuMemcpyHtoD)(CUdeviceptr dst, const void *src, size_t bytes);
    CUresult (*cuMemcpyDtoH)(void *dst, CUdeviceptr src, size_t bytes);
    CUresult (*cuMemsetD32Async)(CUdeviceptr dst, unsigned value, size_t count, CUstream stream);
    CUresult (*cuStreamCreate)(CUstream *stream, unsigned flags);
    CUresult (*cuStreamDestroy)(CUstream stream);
    CUresult (*cuStreamSynchronize)(CUstream stream);
    CUresult (*cuEventCreate)(CUevent *event, unsigned flags);
    CUresult (*cuEventDestroy)(CUevent event);
    CUresult (*cuEventRecord)(CUevent event, CUstream stream);
    CUresult (*cuEventSynchronize)(CUevent event);
    CUresult (*cuEventElapsedTime)(float *ms, CUevent start, CUevent end);
    CUresult (*cuGetErrorName)(CUresult error, const char **name);
};

// The driver, loaded once per process; nullptr when libcuda.so.1 cannot be
// loaded or lacks an entry point, and *why (if given) then says which.
const Driver *driver(std::string *why = nullptr);

// "CUDA_ERROR_OUT_OF_MEMORY (2)", or "CUDA error 2" without a driver.
std::string error_name(CUresult r);

}  // namespace fbngrad::cuda
