#!/usr/bin/env python3
"""Merges fbngrad_cuda_bench's and torch_bn_bench.py's JSON lines into one
markdown table: per dtype x layout x shape, each implementation's time, its
bandwidth (GB/s over the bytes the op must move: y_backprop and x read once,
x_backprop written once) and that as a share of the card's peak, and the
ratio of cuDNN's time to fbngrad's (above 1: fbngrad is faster); then, for the
cases an implementation refused, its error message.

  bench_report.py FBNGRAD.jsonl TORCH.jsonl [--peak-gbps GB/s] [--three-kernels FBNGRAD_3K.jsonl]

The peak comes from --peak-gbps, else from fbngrad_cuda_bench's device line
(memory clock x bus width x 2, from the driver). Where the rows say so, the
table also shows which fbngrad variant ran (the NCHW single pass: "1 pass"),
how many kernels cuDNN launched a call (torch_bn_bench.py --kernels), and,
with --three-kernels (fbngrad_cuda_bench --three-kernels), fbngrad's time
with its three-kernel schedule, for the single pass's A/B.
"""
import argparse
import json
import sys


def read_lines(path):
    rows, info = [], {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line.startswith("{"):
                continue
            obj = json.loads(line)
            (rows.append(obj) if "impl" in obj else info.update(obj))
    return rows, info


def fmt_ms(ms):
    return "n/a" if ms is None else f"{ms:.3f}"


def gbps(row):
    return None if row is None or row.get("ms") in (None, 0) else row["bytes"] / (row["ms"] * 1e-3) / 1e9


def fmt_bw(bw, peak):
    if bw is None:
        return "n/a"
    return f"{bw:.0f} ({100 * bw / peak:.0f}%)" if peak else f"{bw:.0f}"


def launches(row):
    k = row and row.get("kernels")
    return "n/a" if k is None else str(len(k))


def report(fbngrad_path, torch_path, peak_gbps=None, three_kernels_path=None):
    rows, info = read_lines(fbngrad_path)
    trows, tinfo = read_lines(torch_path)
    k3rows = read_lines(three_kernels_path)[0] if three_kernels_path else []
    for r in k3rows:
        r["impl"] = "fbngrad_3k"
    peak = peak_gbps or info.get("peak_gbps")
    key = lambda r: (r["dtype"], r["layout"], tuple(r["shape"]))
    by_impl = {}
    for r in rows + trows + k3rows:
        by_impl.setdefault(r["impl"], {})[key(r)] = r
    show_variant = any("variant" in r for r in rows)
    show_kernels = any("kernels" in r for r in trows)
    order = []
    for r in rows + trows:
        if key(r) not in order:
            order.append(key(r))
    out = []
    dev = info.get("device") or tinfo.get("device") or "unknown GPU"
    out.append(f"GPU: {dev}; peak memory bandwidth {peak:.0f} GB/s" if peak else f"GPU: {dev}")
    if tinfo:
        out.append(f"PyTorch {tinfo.get('torch')}, cuDNN {tinfo.get('cudnn')}")
    out.append("Training-mode backward; GB/s = 3 x N*H*W*C x sizeof(dtype) / time (% of peak); "
               "speed-up = cuDNN time / fbngrad time.")
    out.append("")
    head = ["dtype", "layout", "N,H,W,C", "fbngrad ms", "fbngrad GB/s", "cuDNN ms", "cuDNN GB/s",
            "ATen native ms", "speed-up vs cuDNN"]
    if show_variant:
        head.append("fbngrad schedule")
    if k3rows:
        head.append("3 kernels ms")
    if show_kernels:
        head.append("cuDNN kernels a call")
    out.append("| " + " | ".join(head) + " |")
    out.append("|---|---|---|" + "---:|" * (len(head) - 3))
    for k in order:
        f = by_impl.get("fbngrad", {}).get(k)
        c = by_impl.get("cudnn", {}).get(k)
        a = by_impl.get("aten_native", {}).get(k)
        ratio = "n/a"
        if f and c and f.get("ms") and c.get("ms"):
            ratio = f"{c['ms'] / f['ms']:.2f}x"
        cells = [k[0], k[1], ",".join(map(str, k[2])), fmt_ms(f and f.get("ms")), fmt_bw(gbps(f), peak),
                 fmt_ms(c and c.get("ms")), fmt_bw(gbps(c), peak), fmt_ms(a and a.get("ms")), ratio]
        if show_variant:
            v = (f or {}).get("variant")
            cells.append("n/a" if not v else "1 pass" if v.endswith("_plane") else "3 kernels")
        if k3rows:
            k3 = by_impl.get("fbngrad_3k", {}).get(k)
            cells.append(fmt_ms(k3 and k3.get("ms")))
        if show_kernels:
            cells.append(launches(c))
        out.append("| " + " | ".join(cells) + " |")
    # Why a cell says n/a: each implementation's first error per dtype and layout.
    refused = {}
    for r in rows + trows:
        if r.get("ms") is None and r.get("error"):
            refused.setdefault((r["impl"], r["dtype"], r["layout"]), r["error"])
    if refused:
        out.append("")
        out.append("Refused (n/a above):")
        out.extend(f"- {impl} {dtype} {layout}: {err}" for (impl, dtype, layout), err in refused.items())
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fbngrad_jsonl")
    ap.add_argument("torch_jsonl")
    ap.add_argument("--peak-gbps", type=float, default=None, help="the card's memory bandwidth, GB/s")
    ap.add_argument("--three-kernels", default=None, help="fbngrad_cuda_bench --three-kernels' JSON lines")
    args = ap.parse_args()
    print(report(args.fbngrad_jsonl, args.torch_jsonl, args.peak_gbps, args.three_kernels))
    return 0


if __name__ == "__main__":
    sys.exit(main())
