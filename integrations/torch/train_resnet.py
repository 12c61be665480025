#!/usr/bin/env python3
"""A real training run with fbngrad as PyTorch's batch-norm backward, against PyTorch's own.

A small ResNet (BatchNorm2d after every convolution: 15 of them) learns scikit-learn's digits
(1,797 8x8 images, scaled up to 32x32) on the CPU with torch.set_num_threads(2), in contiguous
and in channels_last memory format, once with PyTorch's kernel and once with fbngrad, from the
same seed (same initial weights, same batches). It reports the loss curves (a PNG), the final
test accuracy, the median time of a training step and of the batch-norm backward (summed over
the 15 layers of a step, from PyTorch's profiler), and checks that the two kernels agree within
float noise: the runs may differ only by the rounding of the backward, so the curves stay
together, and the final accuracies differ by at most a few test images. The scale of
float noise is measured too: the same run in the two memory formats with PyTorch's kernel.

    train_resnet.py --out DIR            # the full run (docs/pytorch.md): 300 steps a run
    train_resnet.py --quick --out DIR    # ctest torch_training_short: 30 steps, no timing

Writes DIR/training.json, DIR/table.md and (with matplotlib) DIR/loss.png. Exit status 1 when
the kernels disagree or fbngrad did not serve every batch-norm backward of its runs.
"""

import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

import fbngrad.torch as ft


def conv_bn(cin, cout, stride=1, k=3):
    return nn.Sequential(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), nn.BatchNorm2d(cout))


class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.a = conv_bn(cin, cout, stride)
        self.b = conv_bn(cout, cout)
        self.short = conv_bn(cin, cout, stride, k=1) if stride != 1 or cin != cout else nn.Identity()

    def forward(self, x):
        return F.relu(self.b(F.relu(self.a(x))) + self.short(x))


class ResNet(nn.Module):
    """A ResNet of 3 stages of 2 blocks (16, 32, 64 channels at 32, 16, 8 pixels)."""

    def __init__(self, classes=10):
        super().__init__()
        self.stem = conv_bn(1, 16)
        self.stages = nn.Sequential(Block(16, 16, 1), Block(16, 16, 1), Block(16, 32, 2), Block(32, 32, 1),
                                    Block(32, 64, 2), Block(64, 64, 1))
        self.fc = nn.Linear(64, classes)

    def forward(self, x):
        x = self.stages(F.relu(self.stem(x)))
        return self.fc(x.mean((2, 3)))


def digits(size):
    """scikit-learn's digits as [N, 1, size, size] float32 (scaled up bilinearly, standardized),
    split 1,500 / 297 by a fixed permutation."""
    from sklearn.datasets import load_digits  # the data ship with scikit-learn: no download
    d = load_digits()
    x = torch.tensor(d.images, dtype=torch.float32).unsqueeze(1) / 16.0
    x = F.interpolate(x, size=(size, size), mode="bilinear", align_corners=False)
    x = (x - x.mean()) / x.std()
    y = torch.tensor(d.target, dtype=torch.int64)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(1234))
    x, y = x[perm], y[perm]
    return (x[:1500], y[:1500]), (x[1500:], y[1500:])


def cpu_model():
    """The CPU's model name (lscpu's), for the record of a timed run."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def bn_backward_ms(prof):
    """Milliseconds of batch-norm backward in a profile (the op, whoever's kernel serves it)."""
    total = 0.0
    for e in prof.key_averages():
        if e.key in ("aten::native_batch_norm_backward", "aten::batch_norm_backward"):
            total += e.cpu_time_total / 1000.0
    return total


def train(kernel, fmt, steps, batch, data, timing):
    (xtr, ytr), (xte, yte) = data
    torch.manual_seed(0)
    model = ResNet().to(memory_format=fmt)
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9, weight_decay=5e-4)
    order = torch.Generator().manual_seed(1)
    ctx = ft.enabled() if kernel == "fbngrad" else ft.disabled()
    losses, step_ms, bn_ms = [], [], []
    n_bn = sum(isinstance(m, nn.BatchNorm2d) for m in model.modules())
    with ctx:
        ft.reset_stats()
        perm = torch.randperm(len(ytr), generator=order)
        pos = 0
        model.train()
        for step in range(steps):
            if pos + batch > len(ytr):
                perm, pos = torch.randperm(len(ytr), generator=order), 0
            idx = perm[pos:pos + batch]
            pos += batch
            xb = xtr[idx].contiguous(memory_format=fmt)
            yb = ytr[idx]
            profile = timing and step >= 10 and step % 10 == 0  # a profiled step now and then
            t0 = time.perf_counter()
            if profile:
                with torch.autograd.profiler.profile() as prof:
                    loss = F.cross_entropy(model(xb), yb)
                    opt.zero_grad(set_to_none=True)
                    loss.backward()
                    opt.step()
                bn_ms.append(bn_backward_ms(prof))
            else:
                loss = F.cross_entropy(model(xb), yb)
                opt.zero_grad(set_to_none=True)
                loss.backward()
                opt.step()
                if step >= 10:
                    step_ms.append((time.perf_counter() - t0) * 1000.0)
            losses.append(loss.item())
        stats = ft.stats()
        model.eval()
        with torch.no_grad():
            correct = (model(xte.contiguous(memory_format=fmt)).argmax(1) == yte).sum().item()
    return {
        "kernel": kernel, "format": "channels_last" if fmt == torch.channels_last else "contiguous",
        "losses": losses, "accuracy": correct / len(yte), "test_images": len(yte),
        "step_ms": statistics.median(step_ms) if step_ms else None,
        "bn_backward_ms": statistics.median(bn_ms) if bn_ms else None,
        "bn_layers": n_bn, "stats": stats,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", required=True, help="folder for training.json, table.md, loss.png")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=32, help="image side after scaling up")
    p.add_argument("--quick", action="store_true", help="30 steps, 16x16 images, no timing (the ctest)")
    args = p.parse_args()
    if args.quick:
        args.steps, args.size = 30, 16
    torch.set_num_threads(2)
    os.makedirs(args.out, exist_ok=True)
    data = digits(args.size)
    runs = []
    for fmt in (torch.contiguous_format, torch.channels_last):
        for kernel in ("pytorch", "fbngrad"):
            r = train(kernel, fmt, args.steps, args.batch, data, timing=not args.quick)
            runs.append(r)
            print(f"{r['format']:>13} {kernel:>7}: final loss {r['losses'][-1]:.4f}, accuracy {r['accuracy']:.4f}, "
                  f"step {r['step_ms'] or 0:.1f} ms, BN backward {r['bn_backward_ms'] or 0:.2f} ms, {r['stats']}",
                  flush=True)

    failures = []
    by = {(r["format"], r["kernel"]): r for r in runs}
    rel = lambda u, v: [abs(a - b) / max(abs(b), 1e-3) for a, b in zip(u["losses"], v["losses"])]
    tail = lambda r: statistics.mean(r["losses"][-20:])
    # The scale of float noise: PyTorch's own kernel in the two memory formats (the same maths,
    # other rounding). Training amplifies any rounding difference (about 3x a step at first),
    # so "within float noise" means: fbngrad drifts from PyTorch's kernel no faster than a mere
    # change of memory format drifts PyTorch's kernel from itself.
    tn, tc = by[("channels_last", "pytorch")], by[("contiguous", "pytorch")]
    noise = rel(tn, tc)
    noise_acc = abs(tn["accuracy"] - tc["accuracy"])
    noise_tail = abs(tail(tn) - tail(tc))
    rows = []
    for fmt in ("contiguous", "channels_last"):
        t, f = by[(fmt, "pytorch")], by[(fmt, "fbngrad")]
        expected = args.steps * f["bn_layers"]
        served = f["stats"]["fused"] + f["stats"]["reduce_only"]
        if served != expected or f["stats"]["fallback"]:
            failures.append(f"{fmt}: fbngrad served {served} of {expected} batch-norm backwards: {f['stats']}")
        if sum(t["stats"].values()):
            failures.append(f"{fmt}: fbngrad served calls of PyTorch's run: {t['stats']}")
        d = rel(f, t)
        early = max(d[:10])
        if early > 3 * max(noise[:10]) + 1e-4:
            failures.append(f"{fmt}: the first 10 losses differ by up to {early:.2e} (relative), float noise "
                            f"is {max(noise[:10]):.2e}")
        if abs(tail(f) - tail(t)) > max(0.1 * tail(t) + 0.02, 2 * noise_tail):
            failures.append(f"{fmt}: the last 20 losses average {tail(f):.4f} with fbngrad, {tail(t):.4f} without")
        if abs(f["accuracy"] - t["accuracy"]) > max(6 / t["test_images"], 2 * noise_acc):
            failures.append(f"{fmt}: accuracy {f['accuracy']:.4f} with fbngrad, {t['accuracy']:.4f} without")
        rows.append((fmt, t, f, max(d), early))

    lines = ["| format | kernel | final accuracy | mean loss, last 20 steps | step ms | BN backward ms (15 layers) "
             "| max relative loss difference to PyTorch's kernel (first 10 steps / all) |",
             "|---|---|---:|---:|---:|---:|---|"]
    for fmt, t, f, dmax, early in rows:
        for r in (t, f):
            diff = "" if r is t else f"{early:.1e} / {dmax:.1e}"
            step = f"{r['step_ms']:.1f}" if r["step_ms"] else "-"
            bn = f"{r['bn_backward_ms']:.2f}" if r["bn_backward_ms"] else "-"
            lines.append(f"| {fmt} | {r['kernel']} | {r['accuracy']:.4f} | "
                         f"{statistics.mean(r['losses'][-20:]):.4f} | {step} | {bn} | {diff} |")
    lines.append("")
    lines.append(f"Float noise for scale: PyTorch's kernel, channels_last against contiguous: loss "
                 f"{max(noise[:10]):.1e} (first 10 steps) / {max(noise):.1e} (all), accuracy {noise_acc:.4f}.")
    table = "\n".join(lines)
    print(table)
    with open(os.path.join(args.out, "table.md"), "w") as fh:
        fh.write(table + "\n")
    meta = {"torch": torch.__version__, "fbngrad": ft.fbngrad_version, "threads": torch.get_num_threads(),
            "cpu": cpu_model(), "date": time.strftime("%Y-%m-%d"),
            "steps": args.steps, "batch": args.batch, "size": args.size, "runs": runs, "failures": failures}
    with open(os.path.join(args.out, "training.json"), "w") as fh:
        json.dump(meta, fh, indent=1)
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(8, 4.5))
        styles = {"pytorch": dict(lw=2.5, alpha=0.5), "fbngrad": dict(lw=1, ls="--")}
        for r in runs:
            ax.plot(r["losses"], label=f"{r['format']}, {r['kernel']}", **styles[r["kernel"]])
        ax.set_yscale("log")
        ax.set_xlabel("step")
        ax.set_ylabel("training loss (cross entropy)")
        ax.set_title(f"ResNet with 15 BatchNorm2d on digits {args.size}x{args.size}, batch {args.batch}, "
                     f"PyTorch {torch.__version__}, 2 threads")
        ax.legend()
        fig.tight_layout()
        fig.savefig(os.path.join(args.out, "loss.png"), dpi=90)
    except ImportError:
        print("matplotlib is missing: no loss.png")
    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    print("the kernels agree: fbngrad served every batch-norm backward, the losses and accuracies agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
