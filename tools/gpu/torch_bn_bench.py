#!/usr/bin/env python3
"""Times PyTorch's batch-norm backward on the GPU (cuDNN's, and ATen's own
CUDA kernel) on ResNet-50's batch-norm shapes, float32 / float16 / bfloat16,
NCHW and channels_last: the baseline that tools/gpu/bench_report.py puts next
to fbngrad_cuda_bench's numbers.

Prints one JSON object per line, the format of fbngrad_cuda_bench:
  {"impl": "cudnn" | "aten_native", "dtype": ..., "layout": "NHWC" | "NCHW",
   "shape": [N, H, W, C], "ms": ..., "bytes": ...}
or, where an implementation refuses a case, "ms": null and "error": "...".
With --kernels, each row also has "kernels": the names of the CUDA kernels
one call launched (torch.profiler, CUPTI), so that the report shows what
fbngrad races (cuDNN's launches a call); null where the profiler fails.
Needs PyTorch with CUDA; nothing else (no network, no Halide).
"""
import argparse
import json
import sys

RESNET50_SHAPES = [(32, 112, 112, 64), (32, 56, 56, 64), (32, 56, 56, 256), (32, 28, 28, 128),
                   (32, 28, 28, 512), (32, 14, 14, 256), (32, 14, 14, 1024), (32, 7, 7, 512),
                   (32, 7, 7, 2048)]
DTYPES = ("float32", "float16", "bfloat16")
LAYOUTS = ("NHWC", "NCHW")
EPS = 1e-5


def time_ms(torch, fn, warmup, reps):
    """Mean milliseconds of fn() over reps calls, between two CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(reps):
        fn()
    stop.record()
    stop.synchronize()
    return start.elapsed_time(stop) / reps


def kernels_of(torch, fn):
    """The CUDA kernels one call of fn() launches, in order (None where the profiler cannot say)."""
    try:
        from torch.profiler import profile, ProfilerActivity
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fn()
            torch.cuda.synchronize()
        events = [e for e in prof.events() if str(getattr(e, "device_type", "")).endswith("CUDA")]
        return [e.name for e in sorted(events, key=lambda e: e.time_range.start)]
    except Exception:  # no CUPTI, an old profiler: the timings stand without it
        return None


def cases(torch, dtype_name, layout, nhwc):
    """The two backward calls for one case, each a zero-argument function (or an exception)."""
    n, h, w, c = nhwc
    dtype = getattr(torch, dtype_name)
    fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
    g = torch.Generator(device="cuda").manual_seed(1)
    x = (0.5 + torch.rand((n, c, h, w), device="cuda", generator=g) * 2 - 1).to(dtype)
    x = x.contiguous(memory_format=fmt)
    dy = (torch.rand((n, c, h, w), device="cuda", generator=g) * 2 - 1).to(dtype).contiguous(memory_format=fmt)
    weight = torch.ones(c, device="cuda", dtype=torch.float32)
    bias = torch.zeros(c, device="cuda", dtype=torch.float32)
    running_mean = torch.zeros(c, device="cuda", dtype=torch.float32)
    running_var = torch.ones(c, device="cuda", dtype=torch.float32)
    ops = torch.ops.aten

    def cudnn():
        # float16 input takes float32 parameters here; bfloat16 input wants them in its own dtype
        # ("Expected tensor for argument #1 'input' to have the same type as ... 'weight'", PyTorch 2.11);
        # cuDNN 9.19 then answers CUDNN_STATUS_NOT_SUPPORTED for bfloat16 (seen on an H200, 2026-12-04).
        w, b, rm, rv = ((t.to(dtype) for t in (weight, bias, running_mean, running_var)) if dtype_name == "bfloat16"
                        else (weight, bias, running_mean, running_var))
        _, save_mean, save_var, reserve = ops.cudnn_batch_norm(x, w, b, rm, rv, True, 0.1, EPS)
        return lambda: ops.cudnn_batch_norm_backward(x, dy, w, rm, rv, save_mean, save_var, EPS, reserve)

    def aten_native():
        _, save_mean, save_invstd = ops.native_batch_norm(x, weight, bias, running_mean, running_var, True, 0.1, EPS)
        return lambda: ops.native_batch_norm_backward(dy, x, weight, running_mean, running_var, save_mean,
                                                      save_invstd, True, EPS, [True, True, True])

    return {"cudnn": cudnn, "aten_native": aten_native}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="the first and the last shape only")
    ap.add_argument("--kernels", action="store_true", help="also record the kernels one call launches")
    args = ap.parse_args()
    import torch  # here, so that --help and py_compile work without it

    if not torch.cuda.is_available():
        print("no CUDA device available to PyTorch", file=sys.stderr)
        return 77
    torch.backends.cudnn.enabled = True
    print(json.dumps({"torch": torch.__version__, "cudnn": torch.backends.cudnn.version(),
                      "device": torch.cuda.get_device_name(0)}), flush=True)
    shapes = [RESNET50_SHAPES[0], RESNET50_SHAPES[-1]] if args.quick else RESNET50_SHAPES
    for dtype_name in DTYPES:
        for layout in LAYOUTS:
            for nhwc in shapes:
                n, h, w, c = nhwc
                itemsize = torch.tensor([], dtype=getattr(torch, dtype_name)).element_size()
                row = {"dtype": dtype_name, "layout": layout, "shape": list(nhwc),
                       "bytes": 3 * n * h * w * c * itemsize}
                for impl, make in cases(torch, dtype_name, layout, nhwc).items():
                    try:
                        fn = make()
                        ms = time_ms(torch, fn, args.warmup, args.reps)
                        extra = {"kernels": kernels_of(torch, fn)} if args.kernels else {}
                        print(json.dumps({"impl": impl, **row, "ms": ms, **extra}), flush=True)
                    except Exception as e:  # an implementation refusing a dtype or layout
                        print(json.dumps({"impl": impl, **row, "ms": None, "error": str(e).splitlines()[0]}),
                              flush=True)
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
