#include "cuda_availability.h"

#include "cuda_driver.h"

namespace fbngrad::runtime {
namespace {

struct Probe {
    bool available = false;
    std::string why;
};

Probe probe() {
    Probe p;
#if !FBNGRAD_WITH_CUDA
    p.why = "this build of fbngrad has no CUDA variants (FBNGRAD_ENABLE_CUDA=OFF)";
    return p;
#else
    const cuda::Driver *d = cuda::driver(&p.why);
    if (!d) return p;
    if (cuda::CUresult r = d->cuInit(0)) {
        p.why = "cuInit failed: " + cuda::error_name(r);
        return p;
    }
    int count = 0;
    if (cuda::CUresult r = d->cuDeviceGetCount(&count)) {
        p.why = "cuDeviceGetCount failed: " + cuda::error_name(r);
        return p;
    }
    if (count <= 0) {
        p.why = "the CUDA driver found no device";
        return p;
    }
    p.available = true;
    return p;
#endif
}

const Probe &cached() {
    static const Probe p = probe();  // thread-safe, once per process
    return p;
}

}  // namespace

bool cuda_available() { return cached().available; }

const std::string &cuda_unavailable_reason() { return cached().why; }

}  // namespace fbngrad::runtime
