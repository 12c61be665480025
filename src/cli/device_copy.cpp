#include "device_copy.h"

#include "cuda_driver.h"

namespace fbngrad::cli {
namespace {

bool check(cuda::CUresult r, const char *what, std::string *error) {
    if (r == 0) return true;
    *error = std::string(what) + " failed: " + cuda::error_name(r);
    return false;
}

}  // namespace

DeviceCopies::~DeviceCopies() {
    if (const cuda::Driver *d = cuda::driver())
        for (unsigned long long p : allocations_) d->cuMemFree(cuda::CUdeviceptr(p));
}

bool DeviceCopies::open(std::string *error) {
    const cuda::Driver *d = cuda::driver(error);
    if (!d) return false;
    cuda::CUdevice dev = 0;
    cuda::CUcontext ctx = nullptr;
    return check(d->cuInit(0), "cuInit", error) && check(d->cuDeviceGet(&dev, 0), "cuDeviceGet", error) &&
           check(d->cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain", error) &&
           check(d->cuCtxPushCurrent(ctx), "cuCtxPushCurrent", error);
}

void *DeviceCopies::copy_to_device(const void *host, size_t bytes, std::string *error) {
    const cuda::Driver *d = cuda::driver(error);
    if (!d) return nullptr;
    cuda::CUdeviceptr p = 0;
    if (!check(d->cuMemAlloc(&p, bytes < 4 ? 4 : bytes), "cuMemAlloc", error)) return nullptr;
    allocations_.push_back(p);
    if (host && bytes && !check(d->cuMemcpyHtoD(p, host, bytes), "cuMemcpyHtoD", error)) return nullptr;
    return reinterpret_cast<void *>(p);
}

bool DeviceCopies::copy_to_host(void *host, const void *device, size_t bytes, std::string *error) {
    const cuda::Driver *d = cuda::driver(error);
    if (!d || !check(d->cuCtxSynchronize(), "cuCtxSynchronize", error)) return false;
    return bytes == 0 ||
           check(d->cuMemcpyDtoH(host, reinterpret_cast<cuda::CUdeviceptr>(device), bytes), "cuMemcpyDtoH", error);
}

}  // namespace fbngrad::cli
