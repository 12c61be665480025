#include "cuda_context.h"

#include <algorithm>
#include <mutex>

#include "cuda_driver.h"
#if FBNGRAD_WITH_CUDA
#include "HalideRuntimeCuda.h"
#endif

namespace fbngrad::runtime {
namespace {

// Set together by set_cuda_context; a call reads both under the mutex.
std::mutex g_settings_mutex;
void *g_context = nullptr;
void *g_stream = nullptr;

#if FBNGRAD_WITH_CUDA
// The call's context made current on this thread while the guard lives (the
// driver's memory calls act on the current context), popped on every way out.
class CurrentContext {
public:
    CurrentContext(const cuda::Driver &d, cuda::CUcontext ctx) : d_(d) {
        if (cuda::CUresult r = d.cuCtxPushCurrent(ctx)) error_ = "cuCtxPushCurrent failed: " + cuda::error_name(r);
    }
    ~CurrentContext() {
        cuda::CUcontext popped = nullptr;
        if (error_.empty()) d_.cuCtxPopCurrent(&popped);
    }
    CurrentContext(const CurrentContext &) = delete;
    CurrentContext &operator=(const CurrentContext &) = delete;
    bool pushed() const { return error_.empty(); }
    const std::string &error() const { return error_; }

private:
    const cuda::Driver &d_;
    std::string error_;
};

// The primary context of device 0, retained once and kept for the process.
bool primary_context(void **out, std::string *error) {
    static std::once_flag once;
    static void *ctx = nullptr;
    static std::string why;
    std::call_once(once, [] {
        const cuda::Driver *d = cuda::driver(&why);
        if (!d) return;
        cuda::CUdevice dev = 0;
        if (cuda::CUresult r = d->cuDeviceGet(&dev, 0)) {
            why = "cuDeviceGet(0) failed: " + cuda::error_name(r);
            return;
        }
        if (cuda::CUresult r = d->cuDevicePrimaryCtxRetain(&ctx, dev)) {
            why = "cuDevicePrimaryCtxRetain failed: " + cuda::error_name(r);
            ctx = nullptr;
        }
    });
    *out = ctx;
    if (!ctx && error) *error = why;
    return ctx != nullptr;
}

// The automatic choice: the calling thread's current context, else the primary one.
bool automatic_context(void **out, std::string *error) {
    const cuda::Driver *d = cuda::driver(error);
    if (!d) return false;
    void *current = nullptr;
    if (d->cuCtxGetCurrent(&current) == 0 && current) {
        *out = current;
        return true;
    }
    return primary_context(out, error);
}

// Halide calls these around every CUDA operation, with the call's CallContext
// as user_context (nullptr only from runtime clean-up outside any call).
int acquire_context(void *user_context, void **ctx, bool /*create*/) {
    auto *cc = static_cast<CallContext *>(user_context);
    if (cc && cc->cuda_context) {
        *ctx = cc->cuda_context;
        return 0;
    }
    std::string why;
    if (automatic_context(ctx, &why)) return 0;
    if (cc) cc->error += (cc->error.empty() ? "" : "; ") + why;
    return halide_error_code_generic_error;
}

int release_context(void *) { return 0; }

int get_stream(void *user_context, void * /*ctx*/, void **stream) {
    auto *cc = static_cast<CallContext *>(user_context);
    *stream = cc ? cc->cuda_stream : nullptr;
    return 0;
}

void install_hooks_once() {
    static std::once_flag once;
    std::call_once(once, [] {
        halide_set_cuda_acquire_context(acquire_context);
        halide_set_cuda_release_context(release_context);
        halide_set_cuda_get_stream(get_stream);
        // Keep the kernels' scratch buffers between calls: cuMemFree would
        // synchronize the device after every call.
        halide_reuse_device_allocations(nullptr, true);
    });
}
#endif  // FBNGRAD_WITH_CUDA

}  // namespace

void set_cuda_context(void *cu_context, void *cu_stream) {
    std::lock_guard<std::mutex> lock(g_settings_mutex);
    g_context = cu_context;
    g_stream = cu_stream;
}

#if !FBNGRAD_WITH_CUDA
// A build without the CUDA variants (FBNGRAD_ENABLE_CUDA=OFF) never reaches
// these (cuda_available() is false, so calls on CUDA tensors stop before), and
// links none of the driver code: a CPU-only program does not carry it.
constexpr const char *kNoCudaBuild = "this build of fbngrad has no CUDA variants (FBNGRAD_ENABLE_CUDA=OFF)";

bool prepare_cuda_call(CallContext *, std::string *error) {
    *error = kNoCudaBuild;
    return false;
}

void make_device_buffer(halide_buffer_t *) {}

std::string zero_device_floats(const CallContext &, void *, size_t) { return kNoCudaBuild; }

DeviceScratch::DeviceScratch(const CallContext &ctx, size_t) : ctx_(ctx), error_(kNoCudaBuild) {}

DeviceScratch::~DeviceScratch() {}

#else
bool prepare_cuda_call(CallContext *ctx, std::string *error) {
    install_hooks_once();
    {
        std::lock_guard<std::mutex> lock(g_settings_mutex);
        ctx->cuda_context = g_context;
        ctx->cuda_stream = g_stream;
    }
    if (ctx->cuda_context) return true;
    return automatic_context(&ctx->cuda_context, error);
}

void make_device_buffer(halide_buffer_t *b) {
    b->device = reinterpret_cast<uint64_t>(b->host);
    b->host = nullptr;
    b->device_interface = halide_cuda_device_interface();
    b->flags = halide_buffer_flag_device_dirty;
}

std::string zero_device_floats(const CallContext &ctx, void *ptr, size_t n) {
    std::string why;
    const cuda::Driver *d = cuda::driver(&why);
    if (!d) return why;
    const CurrentContext current(*d, ctx.cuda_context);
    if (!current.pushed()) return current.error();
    const cuda::CUresult r = d->cuMemsetD32Async(reinterpret_cast<cuda::CUdeviceptr>(ptr), 0u, n, ctx.cuda_stream);
    return r ? "cuMemsetD32Async failed: " + cuda::error_name(r) : "";
}

DeviceScratch::DeviceScratch(const CallContext &ctx, size_t bytes) : ctx_(ctx) {
    const cuda::Driver *d = cuda::driver(&error_);
    if (!d) return;
    const CurrentContext current(*d, ctx.cuda_context);
    if (!current.pushed()) {
        error_ = current.error();
        return;
    }
    const size_t words = std::max<size_t>(1, (bytes + 3) / 4);
    cuda::CUdeviceptr p = 0;
    cuda::CUresult r = d->cuMemAlloc(&p, words * 4);
    if (r) {
        error_ = "cuMemAlloc of " + std::to_string(words * 4) + " bytes failed: " + cuda::error_name(r);
    } else if ((r = d->cuMemsetD32Async(p, 0u, words, ctx.cuda_stream))) {
        error_ = "cuMemsetD32Async failed: " + cuda::error_name(r);
        d->cuMemFree(p);
    } else {
        ptr_ = reinterpret_cast<void *>(p);
    }
}

DeviceScratch::~DeviceScratch() {
    if (!ptr_) return;
    const cuda::Driver *d = cuda::driver();
    if (!d) return;
    const CurrentContext current(*d, ctx_.cuda_context);
    // Leaked rather than freed under a kernel that may still run.
    if (current.pushed() && d->cuStreamSynchronize(ctx_.cuda_stream) == 0)
        d->cuMemFree(reinterpret_cast<cuda::CUdeviceptr>(ptr_));
}
#endif  // FBNGRAD_WITH_CUDA

}  // namespace fbngrad::runtime
