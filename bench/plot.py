#!/usr/bin/python3
"""PNG plots from fbngrad_bench and tf_bench.py JSON files: GB/s against the bandwidth line.

    /usr/bin/python3 bench/plot.py --out results/ results/*.json

Uses Debian's matplotlib (python3-matplotlib), hence /usr/bin/python3 rather than the venv.
Writes, for each dtype and hot/cold cache that has data:
  gbs_<dtype>_<hot|cold>.png   effective GB/s (3 tensors per call) of every impl per shape,
                               one panel per layout x mode, with the measured copy_nt and
                               add_nt bandwidth as horizontal lines
  sweep.png                    GB/s against the bytes a call moves (the size sweep, float32
                               NHWC C=64), hot solid and cold dashed, with the cache sizes
                               of the context as vertical lines and the bandwidth lines
The names are parsed by bench_table.py (beside this file).
"""

import argparse
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_table  # noqa: E402

STYLE = {"fbngrad": ("tab:red", "o"), "onednn": ("tab:blue", "s"), "aten": ("tab:orange", "^"),
         "tensorflow": ("tab:green", "D"), "tensorflow-eigen": ("tab:olive", "v"), "naive": ("tab:gray", "x")}


def style(impl):
    return STYLE.get(impl, ("tab:purple", "."))


def bandwidth_lines(ax, bw):
    for probe, ls in (("copy_nt", "--"), ("add_nt", ":")):
        v = bw.get(probe)
        if v:
            ax.axhline(v, color="black", linestyle=ls, linewidth=1, label="%s %.1f GB/s" % (probe, v))


def shape_bars(res, bw, sweep, dtype, cold, out):
    cases = [k for k in res.order if k[0] != "bandwidth" and k[1] == dtype and k[5] == cold and k[6] == 0
             and k[4] not in sweep]
    if not cases:
        return None
    impls = bench_table.impl_order({k[0] for k in cases if not k[0].startswith("fbngrad-")})
    panels = [(l, m) for l in ("NHWC", "NCHW") for m in ("train", "infer") if any(k[2] == l and k[3] == m for k in cases)]
    fig, axes = plt.subplots(len(panels), 1, figsize=(13, 3.6 * len(panels)), squeeze=False)
    for ax, (layout, mode) in zip(axes[:, 0], panels):
        shapes = sorted({k[4] for k in cases if k[2] == layout and k[3] == mode}, key=bench_table.large_first)
        width = 0.8 / len(impls)
        for j, impl in enumerate(impls):
            xs, ys = [], []
            for i, s in enumerate(shapes):
                v = res.get((impl, dtype, layout, mode, s, cold, 0))
                if v and v[1]:
                    xs.append(i + (j - (len(impls) - 1) / 2) * width)
                    ys.append(v[1])
            ax.bar(xs, ys, width, label=impl, color=style(impl)[0])
        bandwidth_lines(ax, bw)
        ax.set_xticks(range(len(shapes)))
        ax.set_xticklabels(shapes, rotation=20, fontsize=8)
        ax.set_ylabel("GB/s (3 tensors)")
        ax.set_title("%s %s %s, %s caches" % (dtype, layout, mode, "cold" if cold else "hot"))
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].legend(fontsize=8, ncol=4)
    fig.tight_layout()
    path = os.path.join(out, "gbs_%s_%s.png" % (dtype, "cold" if cold else "hot"))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def sweep_plot(res, bw, sweep, caches, num_cpus, out):
    cases = [k for k in res.order if k[0] != "bandwidth" and k[4] in sweep and k[6] == 0]
    if not cases:
        return None
    fig, ax = plt.subplots(figsize=(10, 6))
    for impl in bench_table.impl_order({k[0] for k in cases}):
        for mode in ("train", "infer"):
            for cold in (False, True):
                pts = []
                for k in cases:
                    if k[0] == impl and k[3] == mode and k[5] == cold:
                        v = res.get(k)
                        if v and v[1]:
                            pts.append((3 * 4 * bench_table.eval_elems(k[4]), v[1]))
                if not pts:
                    continue
                pts.sort()
                color, marker = style(impl)
                ax.plot([p[0] for p in pts], [p[1] for p in pts], color=color, marker=marker, markersize=4,
                        linestyle="--" if cold else "-", alpha=1.0 if mode == "train" else 0.55,
                        label="%s %s %s" % (impl, mode, "cold" if cold else "hot"))
    bandwidth_lines(ax, bw)
    for c in caches:
        if c.get("type") in ("Unified", "Data"):
            # The capacity all the cores together have at this level (the threads split the tensors).
            instances = max(1, num_cpus // max(1, c.get("num_sharing", 1)))
            size = c["size"] * instances
            ax.axvline(size, color="gray", linewidth=0.8)
            ax.text(size, ax.get_ylim()[1] * 0.98, " L%d %sx%d KiB" % (c["level"], instances, c["size"] // 1024),
                    fontsize=8, va="top", color="gray", rotation=90)
    ax.set_xscale("log")
    ax.set_xlabel("bytes moved per call (x, y_backprop, x_backprop; float32 NHWC, C=64)")
    ax.set_ylabel("GB/s")
    ax.set_title("Size sweep")
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    path = os.path.join(out, "sweep.png")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=".", help="directory for the PNG files")
    ap.add_argument("json", nargs="+")
    args = ap.parse_args()
    res = bench_table.Results()
    for p in args.json:
        res.add(bench_table.load(p), p)
    sweep = set((res.context("fbngrad_sweep_shapes") or "").split())
    bw = {k[1]: res.get(k)[1] for k in res.order if k[0] == "bandwidth" and k[2] == 0 and res.get(k)}
    os.makedirs(args.out, exist_ok=True)
    made = []
    for dtype in ("float32", "float16", "bfloat16"):
        for cold in (False, True):
            made.append(shape_bars(res, bw, sweep, dtype, cold, args.out))
    made.append(sweep_plot(res, bw, sweep, res.context("caches", []), int(res.context("num_cpus", 1)), args.out))
    for m in made:
        if m:
            print(m)


if __name__ == "__main__":
    main()
