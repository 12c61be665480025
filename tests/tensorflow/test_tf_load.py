#!/usr/bin/env python3
"""fbngrad.tensorflow in fresh processes: the library loads, registers its kernels above
TensorFlow's (the first gradient is already fbngrad's), sizes fbngrad's pool to TensorFlow's
intra-op setting, and warns exactly once, naming TF_ENABLE_ONEDNN_OPTS=0, when oneDNN rewriting
is on, and never when it is off. Prints `N passed, M failed`."""

import os
import subprocess
import sys

CHILD = r"""
import sys, tensorflow as tf
threads = int(sys.argv[1])
if threads:
    tf.config.threading.set_intra_op_parallelism_threads(threads)
import fbngrad.tensorflow as fbt
assert fbt.calls_served() == 0 and fbt.calls_failed() == 0
x = tf.random.normal([2, 3, 4, 5])
with tf.GradientTape() as t:
    t.watch(x)
    y = tf.compat.v1.nn.fused_batch_norm(x, tf.ones([5]), tf.zeros([5]))[0]
g = t.gradient(y, x)
print("served", fbt.calls_served("FusedBatchNormGradV3"), "onednn", int(fbt.onednn_active()),
      "threads", fbt.sync_threads())
# the wrapper: served by fbngrad in any configuration
with tf.GradientTape() as t:
    t.watch(x)
    y = fbt.fused_batch_norm(x, tf.ones([5]), tf.zeros([5]))[0]
t.gradient(y, x)
print("wrapper", fbt.calls_served("FbngradFusedBatchNormGrad"))
"""


def child(onednn, threads=0):
    env = dict(os.environ, TF_ENABLE_ONEDNN_OPTS=onednn, TF_CPP_MIN_LOG_LEVEL="2")
    p = subprocess.run([sys.executable, "-c", CHILD, str(threads)], env=env, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def main():
    passed = failed = 0

    def check(ok, what, detail=""):
        nonlocal passed, failed
        passed, failed = passed + bool(ok), failed + (not ok)
        print(("ok   " if ok else "FAIL ") + what + ("" if ok else f": {detail}"), flush=True)

    rc, out, err = child("0", threads=1)
    check(rc == 0, "oneDNN off: loads in a fresh process and runs", err[-2000:])
    check("served 1 onednn 0 threads 1" in out, "oneDNN off: the first V3 gradient is fbngrad's; pool sized to "
          "TensorFlow's intra-op setting", out)
    check("wrapper 1" in out, "oneDNN off: the wrapper's gradient is fbngrad's", out)
    check(not any(line.startswith("fbngrad:") for line in err.splitlines()), "oneDNN off: no warning", err[-2000:])

    rc, out, err = child("1")
    check(rc == 0, "oneDNN on: loads and runs", err[-2000:])
    check("onednn 1" in out, "oneDNN on: detected", out)
    check("served 0" in out, "oneDNN on: TensorFlow's oneDNN kernel ran the float32 V3 gradient", out)
    check("wrapper 1" in out, "oneDNN on: the wrapper's gradient is fbngrad's", out)
    ours = [line for line in err.splitlines() if line.startswith("fbngrad:")]
    check(len(ours) == 1 and "TF_ENABLE_ONEDNN_OPTS=0" in ours[0],
          "oneDNN on: one warning of fbngrad's, naming TF_ENABLE_ONEDNN_OPTS=0", err[-2000:])
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
