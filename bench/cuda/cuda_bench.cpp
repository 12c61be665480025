// fbngrad_cuda_bench: times fbngrad's CUDA kernels (training mode, the op
// cuDNN's batch-norm backward computes) on ResNet-50's batch-norm shapes, for
// float32 / float16 / bfloat16 in NHWC and NCHW, with CUDA events on the
// default stream. Prints one JSON object per line (tools/gpu/bench_report.py
// merges them with tools/gpu/torch_bn_bench.py's and prints the table):
//   {"device": ..., "peak_gbps": ...}                    first, the GPU
//   {"impl": "fbngrad", "dtype": ..., "layout": ..., "shape": [N,H,W,C], "ms": ..., "bytes": ...,
//    "variant": ...}
// "bytes" is what the op must move at least: y_backprop and x read once,
// x_backprop written once; "variant" the kernel the dispatcher ran (NCHW
// planes of the `plane` class: the single pass, fbng_*_nchw_*_cuda_plane).
// --three-kernels forces the hand-scheduled rows (three kernels a call) on
// every shape, for the single pass's A/B (tools/gpu/run_on_gpu.sh). Exits 77
// where no CUDA device is usable.
//
//   fbngrad_cuda_bench [--reps R] [--warmup W] [--shapes N,H,W,C;...] [--dtypes float32,...] [--layouts NHWC,...]
//                      [--three-kernels]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cuda_driver.h"
#include "fbngrad/fbngrad.h"
#include "reference.h"

using namespace fbngrad;

namespace {

// ResNet-50's batch-norm inputs at batch 32, as N, H, W, C.
const char *kResNet50Shapes =
    "32,112,112,64;32,56,56,64;32,56,56,256;32,28,28,128;32,28,28,512;32,14,14,256;32,14,14,1024;32,7,7,512;"
    "32,7,7,2048";

struct Options {
    int reps = 20, warmup = 3;
    std::vector<std::vector<int64_t>> shapes;
    std::vector<fbngrad_dtype> dtypes = {FBNGRAD_FLOAT32, FBNGRAD_FLOAT16, FBNGRAD_BFLOAT16};
    std::vector<fbngrad_layout> layouts = {FBNGRAD_NHWC, FBNGRAD_NCHW};
    bool three_kernels = false;
};

std::vector<std::string> split(const std::string &s, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    for (std::string item; std::getline(ss, item, sep);)
        if (!item.empty()) out.push_back(item);
    return out;
}

const char *dtype_name(fbngrad_dtype d) {
    return d == FBNGRAD_FLOAT32 ? "float32" : d == FBNGRAD_FLOAT16 ? "float16" : "bfloat16";
}

bool parse(int argc, char **argv, Options *o) {
    std::string shapes = kResNet50Shapes;
    for (int i = 1; i < argc; ++i) {
        std::string a = argv[i];
        if (a == "--three-kernels") {
            o->three_kernels = true;
            continue;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : nullptr;
        if (!v) return false;
        ++i;
        if (a == "--reps") {
            o->reps = std::atoi(v);
        } else if (a == "--warmup") {
            o->warmup = std::atoi(v);
        } else if (a == "--shapes") {
            shapes = v;
        } else if (a == "--dtypes") {
            o->dtypes.clear();
            for (const std::string &d : split(v, ','))
                for (fbngrad_dtype t : {FBNGRAD_FLOAT32, FBNGRAD_FLOAT16, FBNGRAD_BFLOAT16})
                    if (d == dtype_name(t)) o->dtypes.push_back(t);
        } else if (a == "--layouts") {
            o->layouts.clear();
            for (const std::string &l : split(v, ',')) {
                if (l == "NHWC") o->layouts.push_back(FBNGRAD_NHWC);
                if (l == "NCHW") o->layouts.push_back(FBNGRAD_NCHW);
            }
        } else {
            return false;
        }
    }
    for (const std::string &s : split(shapes, ';')) {
        std::vector<int64_t> dims;
        for (const std::string &d : split(s, ',')) dims.push_back(std::atoll(d.c_str()));
        if (dims.size() != 4) return false;
        o->shapes.push_back(dims);
    }
    return o->reps > 0 && o->warmup >= 0 && !o->shapes.empty() && !o->dtypes.empty() && !o->layouts.empty();
}

#define CU_CHECK(call)                                                                          \
    do {                                                                                        \
        cuda::CUresult r_ = (call);                                                             \
        if (r_) {                                                                               \
            std::fprintf(stderr, "%s failed: %s\n", #call, cuda::error_name(r_).c_str());      \
            std::exit(1);                                                                       \
        }                                                                                       \
    } while (0)

struct Device {
    const cuda::Driver &d;
    cuda::CUdeviceptr alloc(size_t bytes, const void *host) {
        cuda::CUdeviceptr p = 0;
        CU_CHECK(d.cuMemAlloc(&p, bytes < 4 ? 4 : bytes));
        if (host && bytes) CU_CHECK(d.cuMemcpyHtoD(p, host, bytes));
        return p;
    }
};

// One dtype x layout x shape: random inputs with realistic statistics, then
// warmup + reps calls between two events.
void bench_one(Device &dev, const Options &o, fbngrad_dtype dtype, fbngrad_layout layout,
               const std::vector<int64_t> &nhwc) {
    const int64_t N = nhwc[0], H = nhwc[1], W = nhwc[2], C = nhwc[3], E = N * H * W * C;
    const std::vector<int64_t> shape = layout == FBNGRAD_NHWC ? nhwc : std::vector<int64_t>{N, C, H, W};
    const int es = ref::dtype_size(dtype);
    std::vector<unsigned char> dy(E * es), x(E * es);
    std::mt19937 rng(1);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (int64_t i = 0; i < E; ++i) {
        ref::store(dtype, dy.data(), i, u(rng));
        ref::store(dtype, x.data(), i, 0.5f + u(rng));
    }
    std::vector<float> scale(C, 1.0f), mean(C, 0.5f), var(C, 1.0f / 3.0f);
    const cuda::CUdeviceptr d_dy = dev.alloc(dy.size(), dy.data()), d_x = dev.alloc(x.size(), x.data()),
                            d_xb = dev.alloc(dy.size(), nullptr), d_sc = dev.alloc(4 * C, scale.data()),
                            d_m = dev.alloc(4 * C, mean.data()), d_v = dev.alloc(4 * C, var.data()),
                            d_sb = dev.alloc(4 * C, nullptr), d_ob = dev.alloc(4 * C, nullptr);

    auto view = [&](cuda::CUdeviceptr p, fbngrad_dtype t, const std::vector<int64_t> &s) {
        fbngrad_tensor v = fbngrad_make_tensor(reinterpret_cast<void *>(p), t, int32_t(s.size()), s.data(), layout);
        v.device = FBNGRAD_CUDA;
        return v;
    };
    const std::vector<int64_t> cs = {C};
    fbngrad_tensor tdy = view(d_dy, dtype, shape), tx = view(d_x, dtype, shape), txb = view(d_xb, dtype, shape);
    fbngrad_tensor tsc = view(d_sc, FBNGRAD_FLOAT32, cs), tm = view(d_m, FBNGRAD_FLOAT32, cs),
                   tv = view(d_v, FBNGRAD_FLOAT32, cs), tsb = view(d_sb, FBNGRAD_FLOAT32, cs),
                   tob = view(d_ob, FBNGRAD_FLOAT32, cs);
    fbngrad_attrs attrs;
    fbngrad_attrs_init(&attrs);
    attrs.epsilon = 1e-5f;
    // The variant the call runs: the dispatcher's pick for the shape, or (--three-kernels) the row's hand one.
    const fbngrad_variant_info *picked =
        o.three_kernels ? fbngrad_selected_variant(dtype, layout, 1, FBNGRAD_CUDA)
                        : fbngrad_selected_variant_for_shape(dtype, layout, 1, FBNGRAD_CUDA, 4, shape.data());
    if (!picked) {
        std::fprintf(stderr, "no CUDA variant for this case\n");
        std::exit(1);
    }
    fbngrad_status fst;
    if (o.three_kernels && fbngrad_force_variant(picked->name, &fst) != FBNGRAD_OK) {
        std::fprintf(stderr, "fbngrad_force_variant(%s): %s\n", picked->name, fst.message);
        std::exit(1);
    }
    auto call = [&] {
        fbngrad_status st;
        if (fbngrad_fused_batch_norm_grad_v2(&tdy, &tx, &tsc, &tm, &tv, &attrs, &txb, &tsb, &tob, &st) != FBNGRAD_OK) {
            std::fprintf(stderr, "fbngrad failed: %s\n", st.message);
            std::exit(1);
        }
    };
    for (int i = 0; i < o.warmup; ++i) call();  // the first call also JIT-compiles the PTX
    CU_CHECK(dev.d.cuCtxSynchronize());
    cuda::CUevent start, stop;
    CU_CHECK(dev.d.cuEventCreate(&start, 0));
    CU_CHECK(dev.d.cuEventCreate(&stop, 0));
    CU_CHECK(dev.d.cuEventRecord(start, nullptr));
    for (int i = 0; i < o.reps; ++i) call();
    CU_CHECK(dev.d.cuEventRecord(stop, nullptr));
    CU_CHECK(dev.d.cuEventSynchronize(stop));
    float ms = 0;
    CU_CHECK(dev.d.cuEventElapsedTime(&ms, start, stop));
    dev.d.cuEventDestroy(start);
    dev.d.cuEventDestroy(stop);
    for (cuda::CUdeviceptr p : {d_dy, d_x, d_xb, d_sc, d_m, d_v, d_sb, d_ob}) dev.d.cuMemFree(p);
    if (o.three_kernels) fbngrad_force_variant("", nullptr);

    std::printf("{\"impl\": \"fbngrad\", \"dtype\": \"%s\", \"layout\": \"%s\", \"shape\": [%lld, %lld, %lld, %lld], "
                "\"ms\": %.6f, \"bytes\": %lld, \"variant\": \"%s\"}\n",
                dtype_name(dtype), layout == FBNGRAD_NHWC ? "NHWC" : "NCHW", (long long)N, (long long)H,
                (long long)W, (long long)C, ms / o.reps, (long long)(3 * E * es), picked->name);
    std::fflush(stdout);
}

}  // namespace

int main(int argc, char **argv) {
    Options o;
    if (!parse(argc, argv, &o)) {
        std::fprintf(stderr,
                     "usage: fbngrad_cuda_bench [--reps R] [--warmup W] [--shapes N,H,W,C;...] "
                     "[--dtypes float32,float16,bfloat16] [--layouts NHWC,NCHW] [--three-kernels]\n");
        return 2;
    }
    if (!fbngrad_cuda_available()) {
        std::fprintf(stderr, "no CUDA device available: %s\n", fbngrad_cuda_unavailable_reason());
        return 77;
    }
    const cuda::Driver &d = *cuda::driver();
    cuda::CUdevice dev = 0;
    cuda::CUcontext ctx = nullptr;
    CU_CHECK(d.cuDeviceGet(&dev, 0));
    CU_CHECK(d.cuDevicePrimaryCtxRetain(&ctx, dev));
    CU_CHECK(d.cuCtxPushCurrent(ctx));  // the context fbngrad then uses (and cudaMalloc would)

    char name[256] = {0};
    int clock_khz = 0, bus_bits = 0, sms = 0, major = 0, minor = 0;
    d.cuDeviceGetName(name, sizeof name - 1, dev);
    d.cuDeviceGetAttribute(&clock_khz, cuda::kAttrMemoryClockRateKHz, dev);
    d.cuDeviceGetAttribute(&bus_bits, cuda::kAttrGlobalMemoryBusWidthBits, dev);
    d.cuDeviceGetAttribute(&sms, cuda::kAttrMultiprocessorCount, dev);
    d.cuDeviceGetAttribute(&major, cuda::kAttrComputeCapabilityMajor, dev);
    d.cuDeviceGetAttribute(&minor, cuda::kAttrComputeCapabilityMinor, dev);
    // Double data rate: two transfers per memory clock, bus_bits/8 bytes each.
    const double peak_gbps = 2.0 * clock_khz * 1e3 * (bus_bits / 8.0) / 1e9;
    std::printf("{\"device\": \"%s\", \"compute_capability\": \"%d.%d\", \"sms\": %d, \"peak_gbps\": %.1f}\n", name,
                major, minor, sms, peak_gbps);

    Device device{d};
    for (fbngrad_dtype t : o.dtypes)
        for (fbngrad_layout l : o.layouts)
            for (const auto &s : o.shapes) bench_one(device, o, t, l, s);
    return 0;
}
