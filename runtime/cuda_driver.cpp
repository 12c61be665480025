#include "cuda_driver.h"

#include <dlfcn.h>

namespace fbngrad::cuda {
namespace {

struct Loaded {
    Driver fns{};
    bool ok = false;
    std::string why;
};

// The _v2 names are the ones cuda.h maps the plain names to since CUDA 3.2 / 4.0.
template <typename Fn>
bool bind(void *lib, const char *symbol, Fn *fn, std::string *why) {
    *fn = reinterpret_cast<Fn>(dlsym(lib, symbol));
    if (!*fn) *why = std::string("libcuda.so.1 has no ") + symbol;
    return *fn != nullptr;
}

Loaded load() {
    Loaded l;
    // RTLD_LOCAL: our handle only; the Halide runtime opens the library itself.
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *e = dlerror();
        l.why = std::string("cannot load the CUDA driver: ") + (e ? e : "libcuda.so.1 not found");
        return l;
    }
    Driver &d = l.fns;
    std::string &w = l.why;
    const bool all = bind(lib, "cuInit", &d.cuInit, &w) && bind(lib, "cuDriverGetVersion", &d.cuDriverGetVersion, &w) &&
                     bind(lib, "cuDeviceGetCount", &d.cuDeviceGetCount, &w) &&
                     bind(lib, "cuDeviceGet", &d.cuDeviceGet, &w) && bind(lib, "cuDeviceGetName", &d.cuDeviceGetName, &w) &&
                     bind(lib, "cuDeviceGetAttribute", &d.cuDeviceGetAttribute, &w) &&
                     bind(lib, "cuDevicePrimaryCtxRetain", &d.cuDevicePrimaryCtxRetain, &w) &&
                     bind(lib, "cuCtxGetCurrent", &d.cuCtxGetCurrent, &w) &&
                     bind(lib, "cuCtxPushCurrent_v2", &d.cuCtxPushCurrent, &w) &&
                     bind(lib, "cuCtxPopCurrent_v2", &d.cuCtxPopCurrent, &w) &&
                     bind(lib, "cuCtxSynchronize", &d.cuCtxSynchronize, &w) &&
                     bind(lib, "cuMemAlloc_v2", &d.cuMemAlloc, &w) && bind(lib, "cuMemFree_v2", &d.cuMemFree, &w) &&
                     bind(lib, "cuMemcpyHtoD_v2", &d.cuMemcpyHtoD, &w) &&
                     bind(lib, "cuMemcpyDtoH_v2", &d.cuMemcpyDtoH, &w) &&
                     bind(lib, "cuMemsetD32Async", &d.cuMemsetD32Async, &w) &&
                     bind(lib, "cuStreamCreate", &d.cuStreamCreate, &w) &&
                     bind(lib, "cuStreamDestroy_v2", &d.cuStreamDestroy, &w) &&
                     bind(lib, "cuStreamSynchronize", &d.cuStreamSynchronize, &w) &&
                     bind(lib, "cuEventCreate", &d.cuEventCreate, &w) &&
                     bind(lib, "cuEventDestroy_v2", &d.cuEventDestroy, &w) &&
                     bind(lib, "cuEventRecord", &d.cuEventRecord, &w) &&
                     bind(lib, "cuEventSynchronize", &d.cuEventSynchronize, &w) &&
                     bind(lib, "cuEventElapsedTime", &d.cuEventElapsedTime, &w) &&
                     bind(lib, "cuGetErrorName", &d.cuGetErrorName, &w);
    l.ok = all;  // the handle stays open for the process
    return l;
}

const Loaded &loaded() {
    static const Loaded l = load();
    return l;
}

}  // namespace

const Driver *driver(std::string *why) {
    const Loaded &l = loaded();
    if (!l.ok && why) *why = l.why;
    return l.ok ? &l.fns : nullptr;
}

std::string error_name(CUresult r) {
    const Driver *d = driver();
    const char *name = nullptr;
    if (d && d->cuGetErrorName(r, &name) == 0 && name) return std::string(name) + " (" + std::to_string(r) + ")";
    return "CUDA error " + std::to_string(r);
}

}  // namespace fbngrad::cuda
