"""fbngrad.torch: fbngrad as PyTorch's CPU batch-norm backward (integrations/torch).

Every float32 / bfloat16 / float16 case of nn.BatchNorm1d/2d/3d is run twice, once with
fbngrad's kernel and once with PyTorch's own (fbngrad.torch.disabled()), and both are held to a
float64 reference (the backward's formula in float64 on exactly the inputs autograd saved for
the kernel) within tolerances derived from the dtype; the counters must show that fbngrad
served every such call. Then
output_mask, the fallbacks (float64, other strides; gradcheck), errors, the thread pool,
enable/disable, the version check and torch.compile.

Run by ctest (tests/torch/CMakeLists.txt) with the build tree's copy of the package on
PYTHONPATH: python -m unittest -v test_fbngrad_torch
"""

import itertools
import os
import subprocess
import sys
import unittest

import torch

import fbngrad.torch as ft

torch.set_num_threads(2)

DTYPES = (torch.float32, torch.bfloat16, torch.float16)
# Unit roundoff of each dtype (half an ulp at 1).
EPS = {torch.float32: 2.0**-24, torch.bfloat16: 2.0**-9, torch.float16: 2.0**-11, torch.float64: 2.0**-53}


def reference(x, g, w, mean, var, train, eps):
    """The float64 gradients of batch norm from exactly the kernel's inputs (w may be None; in
    training `var` is save_invstd, in eval running_var), and the magnitude of the terms each
    output sums or cancels (what float32 arithmetic errs relative to)."""
    dims = [0] + list(range(2, x.dim()))
    shape = [1, -1] + [1] * (x.dim() - 2)
    x, g = x.double(), g.double()
    mean = mean.double().view(shape)
    inv = var.double().view(shape) if train else 1 / (var.double().view(shape) + eps).sqrt()
    wv = w.double().view(shape) if w is not None else torch.ones_like(inv)
    n = x.numel() // x.size(1)
    xhat = (x - mean) * inv
    db, dw = g.sum(dims), (g * xhat).sum(dims)
    if train:
        dx = wv * inv * (g - db.view(shape) / n - xhat * dw.view(shape) / n)
        dx_terms = wv.abs() * inv * (g.abs() + g.abs().sum(dims).view(shape) / n
                                     + xhat.abs() * (g * xhat).abs().sum(dims).view(shape) / n)
    else:
        dx = g * wv * inv
        dx_terms = dx.abs()
    return (dx, dw, db), (dx_terms.max().item(), (g * xhat).abs().sum(dims).max().item(), g.abs().sum(dims).max().item())


def tolerance(ref, terms, dtype, n):
    """|got - ref| allowed: rounding the output to `dtype` (4 units of roundoff of the largest
    result), plus float32 arithmetic over n elements relative to the terms' magnitude."""
    return 4 * EPS[dtype] * ref.abs().max().item() + (8 + 2 * n**0.5) * EPS[torch.float32] * terms + 1e-30


# (module class, shape in (N, C, ...) order, memory formats to try): odd sizes, C below and
# above the vector widths, one sample per channel where PyTorch allows it (eval only: training
# needs more than one value per channel).
CASES = [
    (torch.nn.BatchNorm1d, (8, 5), (torch.contiguous_format,)),
    (torch.nn.BatchNorm1d, (3, 17, 9), (torch.contiguous_format,)),
    (torch.nn.BatchNorm1d, (2, 33), (torch.contiguous_format,)),
    (torch.nn.BatchNorm2d, (4, 3, 7, 5), (torch.contiguous_format, torch.channels_last)),
    (torch.nn.BatchNorm2d, (2, 16, 9, 11), (torch.contiguous_format, torch.channels_last)),
    (torch.nn.BatchNorm2d, (5, 64, 3, 3), (torch.contiguous_format, torch.channels_last)),
    (torch.nn.BatchNorm2d, (1, 8, 1, 2), (torch.contiguous_format, torch.channels_last)),
    (torch.nn.BatchNorm3d, (2, 6, 3, 5, 4), (torch.contiguous_format, torch.channels_last_3d)),
    (torch.nn.BatchNorm3d, (3, 1, 2, 3, 3), (torch.contiguous_format, torch.channels_last_3d)),
]
EVAL_ONLY = [
    (torch.nn.BatchNorm1d, (1, 7), (torch.contiguous_format,)),  # one sample per channel
    (torch.nn.BatchNorm2d, (1, 12, 1, 1), (torch.contiguous_format, torch.channels_last)),
]


def run_module(module_cls, shape, fmt, dtype, affine, train, seed):
    """Forward and backward of a seeded module in `dtype` (`fmt`): the three gradients (None
    for weight and bias without affine) and the kernel's inputs, as autograd saved them.
    Where PyTorch's CPU forward lacks the dtype (float16 in 1.13), the forward runs in float32
    and the backward op is called as autograd would call it on a float16 module."""
    gen = torch.Generator().manual_seed(seed)
    x = (torch.randn(shape, generator=gen) * 2 + 0.5).to(dtype).to(memory_format=fmt)
    g = torch.randn(shape, generator=gen).to(dtype).to(memory_format=fmt)
    m = module_cls(shape[1], affine=affine)
    with torch.no_grad():
        m.running_mean.copy_(torch.randn(shape[1], generator=gen) * 0.1)
        m.running_var.copy_(torch.rand(shape[1], generator=gen) + 0.5)
        if affine:
            m.weight.copy_(torch.randn(shape[1], generator=gen))
            m.bias.copy_(torch.randn(shape[1], generator=gen))
    m.train(train)
    try:
        md = m.to(dtype)
        xi = x.clone().requires_grad_()
        y = md(xi)
    except RuntimeError as e:
        if "not implemented for" not in str(e):
            raise
        y = m.float()(x.float().requires_grad_())
        md = m.to(dtype)
        xi = None
    f = y.grad_fn
    saved = dict(w=md.weight.detach() if affine else None,
                 mean=(f._saved_result1 if train else f._saved_running_mean).to(dtype),
                 var=(f._saved_result2 if train else f._saved_running_var).to(dtype), eps=f._saved_eps)
    if xi is not None:
        y.backward(g)
        got = (xi.grad, md.weight.grad if affine else None, md.bias.grad if affine else None)
    else:
        m_, v_ = saved["mean"], saved["var"]
        out = torch.ops.aten.native_batch_norm_backward(
            g, x, saved["w"], None if train else m_, None if train else v_, m_ if train else None,
            v_ if train else None, train, saved["eps"], [True, affine, affine])
        got = (out[0], out[1] if affine else None, out[2] if affine else None)
    return got, (x, g, saved)


def strides(t):
    """The strides that matter: those of dimensions of more than one element."""
    return [st for st, size in zip(t.stride(), t.shape) if size > 1]


class Gradients(unittest.TestCase):
    """nn.BatchNorm1d/2d/3d in every dtype, layout, mode, with and without affine."""

    def check_case(self, module_cls, shape, fmt, dtype, affine, train, seed):
        name = f"{module_cls.__name__}{shape} {fmt} {dtype} affine={affine} train={train}"
        ft.reset_stats()
        got, (x, g, saved) = run_module(module_cls, shape, fmt, dtype, affine, train, seed)
        s = ft.stats()
        self.assertEqual(s["fallback"], 0, f"{name}: {s} ({ft.last_fallback()})")
        self.assertEqual(s["fused"] + s["apply_only"], 1, f"{name}: fbngrad served it: {s}")
        with ft.disabled():
            ft.reset_stats()
            try:
                theirs, _ = run_module(module_cls, shape, fmt, dtype, affine, train, seed)
            except RuntimeError as e:  # PyTorch's CPU kernel lacks the dtype (float16 in 1.13)
                self.assertIn("not implemented for", str(e))
                theirs = (None, None, None)
            self.assertEqual(sum(ft.stats().values()), 0, f"{name}: disabled, fbngrad served nothing")
        ref, terms = reference(x, g, saved["w"], saved["mean"], saved["var"], train, saved["eps"])
        n = x.numel() // shape[1]
        for i, what in enumerate(("grad_input", "grad_weight", "grad_bias")):
            a, b, r = got[i], theirs[i], ref[i]
            if i > 0 and not affine:
                self.assertIsNone(a)
                continue
            tol = tolerance(r, terms[i], dtype, n)
            err = (a.double() - r).abs().max().item()
            self.assertLessEqual(err, tol, f"{name} {what}: fbngrad vs the float64 reference")
            self.assertEqual(a.dtype, dtype if affine or i == 0 else a.dtype, f"{name} {what}: dtype")
            if i == 0:
                self.assertTrue(a.is_contiguous(memory_format=fmt), f"{name}: grad_input in {fmt}")
            if b is not None:
                self.assertEqual(a.dtype, b.dtype, f"{name} {what}: dtype as PyTorch's")
                self.assertEqual(strides(a), strides(b), f"{name} {what}: memory layout as PyTorch's")
                err_torch = (b.double() - r).abs().max().item()
                self.assertLessEqual(err_torch, tol, f"{name} {what}: PyTorch's kernel vs the float64 reference")

    def test_every_case(self):
        seed = 0
        for (cls, shape, fmts), dtype, affine, train in itertools.product(
                CASES, DTYPES, (True, False), (True, False)):
            for fmt in fmts:
                seed += 1
                with self.subTest(cls=cls.__name__, shape=shape, fmt=str(fmt), dtype=str(dtype),
                                  affine=affine, train=train):
                    self.check_case(cls, shape, fmt, dtype, affine, train, seed)

    def test_one_sample_per_channel_eval(self):
        seed = 1000
        for (cls, shape, fmts), dtype, affine in itertools.product(EVAL_ONLY, DTYPES, (True, False)):
            for fmt in fmts:
                seed += 1
                with self.subTest(cls=cls.__name__, shape=shape, fmt=str(fmt), dtype=str(dtype), affine=affine):
                    self.check_case(cls, shape, fmt, dtype, affine, False, seed)

    def test_one_sample_per_channel_training_is_refused_by_pytorch(self):
        # Not a kernel question: PyTorch's forward refuses it, with and without fbngrad.
        with self.assertRaisesRegex(ValueError, "more than 1 value per channel"):
            torch.nn.BatchNorm1d(4)(torch.randn(1, 4))

    def test_the_check_can_fail(self):
        # The comparison above catches a wrong gradient: one element off by twice the
        # tolerance fails it, in each dtype.
        for dtype in DTYPES:
            got, (x, g, saved) = run_module(torch.nn.BatchNorm2d, (4, 3, 7, 5), torch.contiguous_format, dtype,
                                            True, True, 7)
            ref, terms = reference(x, g, saved["w"], saved["mean"], saved["var"], True, saved["eps"])
            tol = tolerance(ref[0], terms[0], dtype, 4 * 7 * 5)
            bad = got[0].double().clone()
            bad[0, 0, 0, 0] += 2 * tol
            self.assertGreater((bad - ref[0]).abs().max().item(), tol)
            self.assertLess(tol, 0.05 * ref[0].abs().max().item(), "the tolerance is tight")


def direct_args(shape, fmt, dtype, train, seed=3):
    gen = torch.Generator().manual_seed(seed)
    c = shape[1]
    x = torch.randn(shape, generator=gen).to(dtype).to(memory_format=fmt)
    g = torch.randn(shape, generator=gen).to(dtype).to(memory_format=fmt)
    w = torch.randn(c, generator=gen)
    rm, rv = torch.randn(c, generator=gen) * 0.1, torch.rand(c, generator=gen) + 0.5
    sm, si = torch.randn(c, generator=gen) * 0.1, torch.rand(c, generator=gen) + 0.5
    if train:
        return [g, x, w, None, None, sm, si, True, 1e-5]
    return [g, x, w, rm, rv, None, None, False, 1e-5]


def nbb(args, mask):
    return torch.ops.aten.native_batch_norm_backward(*args, mask)


class OutputMask(unittest.TestCase):
    """aten::native_batch_norm_backward called directly: each output_mask takes its path, and
    gives what PyTorch's kernel gives."""

    def test_masks(self):
        for train, mask, fmt in itertools.product((True, False), itertools.product((True, False), repeat=3),
                                                  (torch.contiguous_format, torch.channels_last)):
            mask = list(mask)
            with self.subTest(train=train, mask=mask, fmt=str(fmt)):
                args = direct_args((3, 10, 5, 4), fmt, torch.float32, train)
                ft.reset_stats()
                got = nbb(args, mask)
                s = ft.stats()
                if not any(mask):
                    expected = "nothing_asked"
                elif not mask[0]:
                    expected = "reduce_only"
                elif not train and not mask[1] and not mask[2]:
                    expected = "apply_only"
                else:
                    expected = "fused"
                self.assertEqual(s[expected], 1, s)
                self.assertEqual(sum(s.values()), 1, s)
                with ft.disabled():
                    theirs = nbb(args, mask)
                for m, a, b in zip(mask, got, theirs):
                    if not m:
                        continue
                    self.assertEqual(a.dtype, b.dtype)
                    torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)

    def test_expanded_grad_out_is_copied_then_served(self):
        # An expanded (stride 0) grad_out, as y.sum().backward() hands the kernel.
        x = torch.randn(4, 6, 5, 5, requires_grad=True)
        bn = torch.nn.BatchNorm2d(6)
        ft.reset_stats()
        y = bn(x)
        y.backward(torch.arange(6.0).view(1, 6, 1, 1).expand_as(y))
        s = ft.stats()
        self.assertEqual((s["fused"], s["grad_out_copy"], s["fallback"]), (1, 1, 0), s)
        got = x.grad.clone()
        x.grad = None
        with ft.disabled():
            y = bn(x)
            y.backward(torch.arange(6.0).view(1, 6, 1, 1).expand_as(y))
        torch.testing.assert_close(got, x.grad, rtol=1e-5, atol=1e-5)


class Fallback(unittest.TestCase):
    """What fbngrad does not serve goes to PyTorch's own kernel, unchanged."""

    def test_float64_gradcheck(self):
        bn = torch.nn.BatchNorm2d(3).double()
        x = torch.randn(2, 3, 3, 2, dtype=torch.float64, requires_grad=True)
        ft.reset_stats()
        self.assertTrue(torch.autograd.gradcheck(lambda t: bn(t), (x,)))
        s = ft.stats()
        self.assertGreater(s["fallback"], 0, s)
        self.assertEqual(s["fused"] + s["reduce_only"] + s["apply_only"], 0, s)
        self.assertIn("dtype", ft.last_fallback())
        bn.eval()
        self.assertTrue(torch.autograd.gradcheck(lambda t: bn(t), (x,)))

    def test_other_strides(self):
        for make in (lambda t: t[:, :, ::2],                # every other row
                     lambda t: t.transpose(2, 3)):          # neither contiguous nor channels-last
            base = torch.randn(2, 4, 6, 5)
            x = make(base).detach().requires_grad_()
            g = make(torch.randn(2, 4, 6, 5))
            bn = torch.nn.BatchNorm2d(4)
            ft.reset_stats()
            bn(x).backward(g)
            s = ft.stats()
            self.assertEqual((s["fallback"], s["fused"]), (1, 0), s)
            self.assertIn("neither contiguous nor channels-last", ft.last_fallback())
            got = x.grad.clone()
            x.grad = None
            with ft.disabled():
                bn(x).backward(g)
            self.assertTrue(torch.equal(got, x.grad), "the fallback is PyTorch's kernel itself")

    def test_mixed_dtypes_fall_back(self):
        args = direct_args((2, 3, 4, 4), torch.contiguous_format, torch.float32, True)
        args[0] = args[0].double()
        ft.reset_stats()
        try:
            nbb(args, [True, True, True])
        except RuntimeError:
            pass  # PyTorch's kernel may refuse it: its own error, not fbngrad's
        self.assertEqual(ft.stats()["fallback"], 1)
        self.assertIn("grad_out's dtype", ft.last_fallback())


class Errors(unittest.TestCase):
    """Invalid calls raise RuntimeError with fbngrad's (TensorFlow's) message; nothing crashes."""

    def test_bad_parameter_sizes(self):
        for train, mask, which in itertools.product((True, False), ([True, True, True], [False, True, True],
                                                                    [True, False, False]), (2, 3, 4)):
            with self.subTest(train=train, mask=mask, which=which):
                args = direct_args((2, 5, 3, 3), torch.contiguous_format, torch.float32, train)
                idx = which if which == 2 else (5 if train else 3) + (which - 3)
                args[idx] = torch.ones(4)  # 4 elements for 5 channels
                with self.assertRaisesRegex(RuntimeError, "fbngrad: .*(4|5)"):
                    nbb(args, mask)

    def test_parameter_of_two_dimensions(self):
        args = direct_args((2, 5, 3, 3), torch.contiguous_format, torch.float32, True)
        args[2] = torch.ones(5, 1)
        with self.assertRaisesRegex(RuntimeError, "fbngrad: "):
            nbb(args, [True, True, True])

    def test_still_works_after_errors(self):
        args = direct_args((2, 5, 3, 3), torch.contiguous_format, torch.float32, True)
        ft.reset_stats()
        nbb(args, [True, True, True])
        self.assertEqual(ft.stats()["fused"], 1)


class Control(unittest.TestCase):
    def test_enable_disable_and_context_managers(self):
        self.assertTrue(ft.is_enabled())
        with ft.disabled():
            self.assertFalse(ft.is_enabled())
            with ft.enabled():
                self.assertTrue(ft.is_enabled())
            self.assertFalse(ft.is_enabled())
        self.assertTrue(ft.is_enabled())
        ft.disable()
        ft.disable()
        self.assertFalse(ft.is_enabled())
        ft.enable()
        ft.enable()
        self.assertTrue(ft.is_enabled())
        try:
            with ft.disabled():
                raise KeyError("inside")
        except KeyError:
            pass
        self.assertTrue(ft.is_enabled(), "restored after an exception")

    def test_operators(self):
        self.assertIn("aten::native_batch_norm_backward", ft.operators)
        has_new = hasattr(torch.ops.aten, "batch_norm_backward")
        self.assertEqual("aten::batch_norm_backward" in ft.operators, has_new)

    def test_version_check(self):
        # A library built against another PyTorch is refused at import, with a message.
        code = ("import torch; torch.__version__ = '0.1.0'\n"
                "try:\n    import fbngrad.torch\nexcept ImportError as e:\n    print('refused:', e)\n")
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        self.assertIn("refused:", out)
        self.assertIn("was built against PyTorch", out)


class BatchNormBackward(unittest.TestCase):
    """aten::batch_norm_backward (PyTorch 2.x), the backward of _batch_norm_with_update (training)
    and _batch_norm_no_update (eval) that torch.export and compiled graphs use: served by
    fbngrad, equal to PyTorch's kernel and to the float64 reference."""

    def test_with_and_without_update(self):
        if not hasattr(torch.ops.aten, "_batch_norm_with_update"):
            self.skipTest(f"PyTorch {torch.__version__} has no aten::batch_norm_backward (2.x)")
        self.assertIn("aten::batch_norm_backward", ft.operators)
        for update, dtype, fmt in itertools.product((True, False), DTYPES,
                                                    (torch.contiguous_format, torch.channels_last)):
            with self.subTest(update=update, dtype=str(dtype), fmt=str(fmt)):
                gen = torch.Generator().manual_seed(11)
                x = torch.randn(3, 6, 5, 4, generator=gen).to(dtype).to(memory_format=fmt)
                g = torch.randn(3, 6, 5, 4, generator=gen).to(dtype).to(memory_format=fmt)
                w, b = torch.randn(6, generator=gen), torch.randn(6, generator=gen)
                rm, rv = torch.randn(6, generator=gen) * 0.1, torch.rand(6, generator=gen) + 0.5

                def run():
                    xi, wi, bi = (t.clone().requires_grad_() for t in (x, w, b))
                    op = torch.ops.aten._batch_norm_with_update if update else torch.ops.aten._batch_norm_no_update
                    out = op(xi, wi, bi, rm.clone(), rv.clone(), 0.1, 1e-5)
                    out[0].backward(g)
                    return (xi.grad, wi.grad, bi.grad), out

                ft.reset_stats()
                try:
                    got, out = run()
                except RuntimeError as e:  # PyTorch's CPU forward lacks the dtype
                    self.assertIn("not implemented for", str(e))
                    continue
                s = ft.stats()
                self.assertEqual((s["fused"], s["fallback"]), (1, 0), f"{s} ({ft.last_fallback()})")
                with ft.disabled():
                    theirs, _ = run()
                mean, var = (out[1], out[2]) if update else (rm, rv)
                ref, terms = reference(x, g, w, mean.to(dtype), var.to(dtype), update, 1e-5)
                for i in range(3):
                    tol = tolerance(ref[i], terms[i], dtype, x.numel() // 6)
                    self.assertLessEqual((got[i].double() - ref[i]).abs().max().item(), tol, i)
                    self.assertLessEqual((theirs[i].double() - ref[i]).abs().max().item(), tol, i)
                    self.assertEqual(strides(got[i]), strides(theirs[i]))


def thread_count():
    return len(os.listdir("/proc/self/task"))


class Threads(unittest.TestCase):
    """fbngrad's parallel loops run on PyTorch's intra-op pool."""

    def test_no_second_pool_and_same_bits(self):
        results = []
        for n in (2, 1, 2):
            torch.set_num_threads(n)
            args = direct_args((8, 64, 32, 32), torch.channels_last, torch.float32, True)
            torch.ones(1 << 20).sum()  # PyTorch's own pool is up
            before = thread_count()
            ft.reset_stats()
            results.append(nbb(args, [True, True, True]))
            self.assertEqual(ft.stats()["fused"], 1)
            self.assertEqual(thread_count(), before, "fbngrad started no threads of its own")
        torch.set_num_threads(2)
        for a, b in zip(results[0], results[1]):
            self.assertTrue(torch.equal(a, b), "the same bits on 1 and 2 threads")


class Compile(unittest.TestCase):
    def test_torch_compile(self):
        if not hasattr(torch, "compile"):
            self.skipTest(f"PyTorch {torch.__version__} has no torch.compile (2.0 and later)")
        bn = torch.nn.BatchNorm2d(4)
        x = torch.randn(2, 4, 5, 5, requires_grad=True)
        ft.reset_stats()
        torch.compile(bn)(x).sum().backward()
        # Compiled graphs decompose the backward into their own kernels: fbngrad is bypassed
        # (docs/pytorch.md); the result must still be right.
        got = x.grad.clone()
        x.grad = None
        with ft.disabled():
            bn(x).sum().backward()
        torch.testing.assert_close(got, x.grad, rtol=1e-4, atol=1e-5)


if __name__ == "__main__":
    unittest.main(verbosity=2)
