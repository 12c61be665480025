"""fbngrad for TensorFlow: importing this module makes fbngrad TensorFlow's CPU kernel for
FusedBatchNormGradV2 and FusedBatchNormGradV3 (float32, float16, bfloat16), the gradient of
every fused batch norm (tf.compat.v1.nn.fused_batch_norm, tf-keras' BatchNormalization, ...)
in eager mode, tf.function and graphs, as long as TensorFlow's oneDNN rewriting is off
(TF_ENABLE_ONEDNN_OPTS=0). `fused_batch_norm` below has fbngrad's gradient whatever the setting.

    import fbngrad.tensorflow as fbt
    fbt.calls_served()          # how many gradients fbngrad has computed in this process

Which kernel runs where, the threads, the training comparison: docs/tensorflow.md.
"""

import ctypes as _ctypes

import tensorflow as _tf

from fbngrad import library_path as _library_path

__all__ = ["fused_batch_norm", "calls_served", "calls_failed", "reset_calls", "onednn_active",
           "sync_threads", "LIBRARY", "ops"]

LIBRARY = _library_path("tensorflow", "libfbngrad_tf.so")
# Registers the kernels (above TensorFlow's priority) and the op FbngradFusedBatchNormGrad;
# `ops.fbngrad_fused_batch_norm_grad` is that op's Python wrapper.
ops = _tf.load_op_library(LIBRARY)
# The same handle (dlopen counts references): the library's C functions for what it served.
_lib = _ctypes.CDLL(LIBRARY)
_lib.fbngrad_tf_calls_served.restype = _ctypes.c_longlong
_lib.fbngrad_tf_calls_served.argtypes = [_ctypes.c_int]
_lib.fbngrad_tf_calls_failed.restype = _ctypes.c_longlong
_lib.fbngrad_tf_onednn_active.restype = _ctypes.c_int
_lib.fbngrad_tf_set_num_threads.restype = _ctypes.c_int
_lib.fbngrad_tf_set_num_threads.argtypes = [_ctypes.c_int]

_OPS = {"FusedBatchNormGradV2": 0, "FusedBatchNormGradV3": 1, "FbngradFusedBatchNormGrad": 2}


def calls_served(op=None):
    """How many calls fbngrad computed in this process (since the last reset_calls()): of `op`
    ("FusedBatchNormGradV2", "FusedBatchNormGradV3" or "FbngradFusedBatchNormGrad"), or of all three."""
    return int(_lib.fbngrad_tf_calls_served(-1 if op is None else _OPS[op]))


def calls_failed():
    """How many calls to fbngrad's kernels ended in an error (bad input) since the last reset_calls()."""
    return int(_lib.fbngrad_tf_calls_failed())


def reset_calls():
    """Sets the counters of calls_served() and calls_failed() to zero."""
    _lib.fbngrad_tf_reset_calls()


def onednn_active():
    """True when TensorFlow's oneDNN rewriting is on in this process (tensorflow::IsMKLEnabled):
    FusedBatchNormGradV2/V3 in float32 and bfloat16 then run TensorFlow's _MklNative kernels,
    not fbngrad's; fused_batch_norm below still uses fbngrad."""
    return _lib.fbngrad_tf_onednn_active() == 1


def sync_threads():
    """Sizes fbngrad's thread pool to TensorFlow's intra-op setting (0, TensorFlow's default of one
    thread per core, is fbngrad's default too). Called on import; call it again after
    tf.config.threading.set_intra_op_parallelism_threads. Returns the number set (0: default)."""
    n = int(_tf.config.threading.get_intra_op_parallelism_threads())
    _lib.fbngrad_tf_set_num_threads(n)
    return n


sync_threads()


def fused_batch_norm(x, scale, offset, mean=None, variance=None, epsilon=0.001, data_format="NHWC",
                     is_training=True, exponential_avg_factor=1.0, name=None):
    """tf.compat.v1.nn.fused_batch_norm with fbngrad's gradient, whatever TF_ENABLE_ONEDNN_OPTS says.

    The forward pass is TensorFlow's FusedBatchNormV3 (oneDNN's or Eigen's, as TensorFlow picks);
    the gradient is the op FbngradFusedBatchNormGrad of this library, which oneDNN does not rewrite.
    Returns (y, mean, variance) as tf.compat.v1.nn.fused_batch_norm does; gradients flow to x,
    scale and offset (None to mean and variance, as in TensorFlow). In inference (is_training=False)
    mean and variance are required; NCHW/NCDHW inference runs in place, without TensorFlow's transposes.
    """
    with _tf.name_scope(name or "FbngradFusedBatchNorm"):
        x = _tf.convert_to_tensor(x, name="x")
        scale = _tf.convert_to_tensor(scale, dtype=_tf.float32, name="scale")
        offset = _tf.convert_to_tensor(offset, dtype=_tf.float32, name="offset")
        if is_training and mean is None:
            mean = _tf.constant([], dtype=_tf.float32)
        if is_training and variance is None:
            variance = _tf.constant([], dtype=_tf.float32)
        if mean is None or variance is None:
            raise ValueError("fused_batch_norm: mean and variance are required when is_training is False")
        mean = _tf.convert_to_tensor(mean, dtype=_tf.float32, name="mean")
        variance = _tf.convert_to_tensor(variance, dtype=_tf.float32, name="variance")
        fmt = data_format.decode() if isinstance(data_format, bytes) else data_format

        @_tf.custom_gradient
        def _bn(x, scale, offset):
            y, batch_mean, batch_var, rs1, rs2, _ = _tf.raw_ops.FusedBatchNormV3(
                x=x, scale=scale, offset=offset, mean=mean, variance=variance, epsilon=epsilon,
                exponential_avg_factor=exponential_avg_factor, data_format=fmt, is_training=is_training)
            saved_mean, saved_var = (rs1, rs2) if is_training else (mean, variance)

            def grad(dy, _dmean, _dvar):
                dx, dscale, doffset = ops.fbngrad_fused_batch_norm_grad(
                    y_backprop=dy, x=x, scale=scale, reserve_space_1=saved_mean, reserve_space_2=saved_var,
                    epsilon=epsilon, data_format=fmt, is_training=is_training)
                return dx, dscale, doffset

            return (y, batch_mean, batch_var), grad

        return _bn(x, scale, offset)
