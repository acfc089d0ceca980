"""The fast depthwise convolution op for every Keras backend (the layers are in
:mod:`keras_structinit.layers.depthwise`).

A depthwise convolution (channels last, kernel ``K`` of shape ``(kh, kw, C, m)``)
computes, for output channel ``c * m + q``::

    y[b, h, w, c*m + q] = sum_{i, j} x_pad[b, s*h + i, s*w + j, c] * K[i, j, c, q]     (1)

XLA's CPU backend lowers ``feature_group_count = C`` convolutions to a slow
generic loop (~40x slower than PyTorch's kernel for k = 9). Written as the sum
of ``kh * kw`` shifted, per-channel-scaled copies of the input, Eq. (1) becomes
one fused elementwise loop that XLA vectorizes over channels. Its gradients are
the same kind of loop (stride 1)::

    dL/dx_pad = sum_{i, j} shift_{(i, j)}(g) * K[i, j]       (correlation of g with the flipped kernel)
    dL/dK[i, j, c] = sum_{b, h, w} x_pad[b, h + i, w + j, c] * g[b, h, w, c]

the latter as batched matrix products over the batch axis, a few output rows
at a time (outputs up to 16 wide), or by FFT (wider ones): both read the data
once instead of kh * kw times. They are given to autodiff explicitly; when
the kernel is frozen nothing consumes the kernel gradient and the compiler
drops it. Kernels of more than 11 x 11 taps loop over kernel rows, since XLA
compiles one very long unrolled sum poorly. Measurements: ``benchmarks/results/archive/depthwise_goals.md``.

Paths (``implementation="auto"``; the table is :data:`AUTO_PATHS`, one path per backend and device,
for trainable and frozen kernels alike: on a CPU the frozen kernels' fastest path was the trainable
ones' in every case measured, ``benchmarks/results/cpu/frozen_speed.md``, and on one H100 the
shifted sum's lead held with a frozen kernel too):

* JAX on CPU, TensorFlow inside an XLA-compiled function on CPU: shifted sum.
* JAX on a GPU, float32 inputs, kernels of at least :data:`GPU_SHIFTED_MIN_KERNEL` taps
  a side: shifted sum. On one H100 at k = 9 and 15 it beat XLA's grouped convolution
  forward (1.7-6x), forward and backward (3.2-5.9x) and with a frozen kernel (1.7-4.7x),
  and ConvMixer-128/6's train step ran 2.2x faster; at k = 7 it was faster only forward
  and backward, at k = 3 slower (``benchmarks/results/gpu/depthwise_speed.md``). 16-bit
  inputs, not measured there, keep the native op.
* TensorFlow without XLA: ``tf.nn.depthwise_conv2d`` (oneDNN kernel).
* PyTorch: ``torch.nn.functional.conv2d(groups=C)`` on a channels-last view on CPU
  (no layout copy), on a contiguous NCHW copy on a GPU (cuDNN's channels-last depthwise
  kernel was 4-7x slower there at k = 9-15); explicit symmetric padding when possible.
* Other GPUs/TPUs (TensorFlow on a GPU: not measured yet), ``channels_first``,
  dilation > 1: the backend's native op (``keras.ops.depthwise_conv``).

The shifted sum also runs where TensorFlow traces unknown sizes (a partial last
batch, ``tf.data`` without ``drop_remainder``, images of varying size): sizes
are then read with ``ops.shape`` and the padding computed from them, while fully
known shapes trace to the same graph as plain ints would.
"""

from __future__ import annotations

import functools

import keras
from keras import ops

from keras_structinit.utils import validation
from keras_structinit.utils.backend import accelerator, in_tf_xla_context

__all__ = [
    "AUTO_PATHS",
    "IMPLEMENTATIONS",
    "PATHS",
    "check_implementation",
    "convolve_by_path",
    "depthwise_conv2d",
    "select_implementation",
    "shifted_depthwise_conv2d",
]

IMPLEMENTATIONS = ("auto", "native", "shifted")
#: The computations a call ends in: :func:`select_implementation`'s answers.
PATHS = ("shifted", "torch", "native")
#: The smallest kernel side for which ``"auto"`` takes the shifted sum under JAX on a GPU.
GPU_SHIFTED_MIN_KERNEL = 9


def _shape(x):
    """``x.shape``, with each unknown size (TensorFlow graphs) as a scalar tensor.

    The size arithmetic below works on ints and tensors alike; a fully known
    shape stays a tuple of ints, so static shapes add no shape ops.
    """
    shape = tuple(x.shape)
    return ops.shape(x) if None in shape else shape


def _at_least_zero(size):
    return ops.maximum(size, 0) if ops.is_tensor(size) else max(size, 0)


def _same_padding(size, kernel, stride):
    """TF/Keras 'same' padding ``(before, after)`` along one axis (``size`` may be a tensor)."""
    if stride == 1:
        total = kernel - 1  # whatever the size: stride-1 padding stays static
    else:
        total = _at_least_zero((-(-size // stride) - 1) * stride + kernel - size)
    return total // 2, total - total // 2


def _output_size(padded, kernel, stride):
    return (padded - kernel) // stride + 1


def _pad_amounts(in_h, in_w, kh, kw, strides, padding):
    if padding == "same":
        return _same_padding(in_h, kh, strides[0]), _same_padding(in_w, kw, strides[1])
    return (0, 0), (0, 0)


def _tap(x_pad, i, j, out_h, out_w, strides):
    """``x_pad[:, i : i + s*out_h : s, j : j + s*out_w : s, :]`` with keras.ops."""
    sh, sw = strides
    b, hp, wp, c = _shape(x_pad)
    if sh == 1 and sw == 1:
        return ops.slice(x_pad, (0, i, j, 0), (b, out_h, out_w, c))
    # Strided taps: view rows as (row // s, row % s) and slice one phase.
    grid = ops.reshape(x_pad, (-1, hp // sh, sh, wp // sw, sw, c))
    tap = ops.slice(grid, (0, i // sh, i % sh, j // sw, j % sw, 0), (b, out_h, 1, out_w, 1, c))
    return ops.reshape(tap, (-1, out_h, out_w, c))


def _shifted_sum(x_pad, kernel, out_h, out_w, strides):
    """Eq. (1) for ``m = 1`` as ``sum_{i,j} tap_{(i,j)}(x_pad) * kernel[i, j]``."""
    kh, kw = kernel.shape[:2]
    if kh * kw > _MAX_UNROLLED_TAPS and tuple(strides) == (1, 1):
        return _shifted_sum_row_loop(x_pad, kernel, out_h, out_w)
    total = None
    for i in range(kh):
        for j in range(kw):
            term = _tap(x_pad, i, j, out_h, out_w, strides) * kernel[i, j]
            total = term if total is None else total + term
    return total


# Above this many taps XLA's CPU fusion of one unrolled sum degrades sharply
# (measured: k = 15 ran 13x slower than k = 9 for 2.8x the taps).
_MAX_UNROLLED_TAPS = 121


def _shifted_sum_row_loop(x_pad, kernel, out_h, out_w):
    """Stride-1 shifted sum as a loop over kernel rows (one fused row per step)."""
    kh, kw = kernel.shape[:2]
    b, _, wp, c = _shape(x_pad)

    def body(i, total):
        rows = ops.slice(x_pad, (0, i, 0, 0), (b, out_h, wp, c))
        kernel_row = ops.take(kernel, i, axis=0)
        for j in range(kw):
            total = total + ops.slice(rows, (0, 0, j, 0), (b, out_h, out_w, c)) * kernel_row[j]
        return total

    zeros = ops.zeros((b, out_h, out_w, c), dtype=x_pad.dtype)
    return ops.fori_loop(0, kh, body, zeros)


def _kernel_grad_fft(x_pad, g, kh, kw):
    """``dL/dK[i, j, c] = sum_{b,h,w} x_pad[b, h+i, w+j, c] g[b, h, w, c]`` by FFT.

    The cross-correlation over ``(h, w)`` is ``IFFT(sum_b FFT(x_pad) conj(FFT(g)))``
    with ``g`` zero-padded to ``x_pad``'s size (no wrap-around reaches lags
    ``< (kh, kw)``). Summing over the batch in the frequency domain leaves a
    single inverse transform per channel. Costs O(B C Hp Wp log(Hp Wp)) instead
    of the ``kh * kw`` passes over the data of a direct computation.
    """
    _, hp, wp, _ = _shape(x_pad)
    _, h, w, _ = _shape(g)
    x = ops.transpose(x_pad, (0, 3, 1, 2))  # (B, C, Hp, Wp)
    g = ops.pad(ops.transpose(g, (0, 3, 1, 2)), ((0, 0), (0, 0), (0, hp - h), (0, wp - w)))

    def spectrum(t):
        real, imag = ops.rfft(t)  # along Wp: (B, C, Hp, F)
        real, imag = ops.swapaxes(real, -1, -2), ops.swapaxes(imag, -1, -2)
        return ops.fft((real, imag))  # along Hp: (B, C, F, Hp)

    xr, xi = spectrum(x)
    gr, gi = spectrum(g)
    # sum_b X * conj(G)
    real = ops.sum(xr * gr + xi * gi, axis=0)
    imag = ops.sum(xi * gr - xr * gi, axis=0)
    # Inverse along Hp via conj(FFT(conj(z))) / Hp, then inverse real FFT along Wp.
    real, imag = ops.fft((real, -imag))
    rows = ops.cast(hp, real.dtype)  # hp may be a tensor
    real, imag = ops.swapaxes(real, -1, -2) / rows, ops.swapaxes(-imag, -1, -2) / rows
    corr = ops.irfft((real, imag), fft_length=wp)  # (C, Hp, Wp)
    return ops.transpose(corr[:, :kh, :kw], (1, 2, 0))


# Output widths up to this use `_kernel_grad_rows`; wider ones the FFT, whose
# cost grows as W log W against the row products' W * (W + k - 1).
_MAX_ROWS_GRAD_WIDTH = 16
# Output rows per product in `_kernel_grad_rows` (measured fastest of 1, 2, 4).
_ROWS_PER_STEP = 2


def _kernel_grad_rows(x_pad, g, kh, kw):
    """``dL/dK`` (as `_kernel_grad_fft`) by one batched matrix product per ``R`` output rows.

    For output rows ``h0 .. h0 + R - 1`` and each channel ``c``, contract the
    batch axis::

        P[c, r, w, i', w'] = sum_b g[b, h0 + r, w, c] x_pad[b, h0 + i', w', c]

    (``i' < R + kh - 1``) and accumulate the entries ``i' = r + i``:
    ``A[c, w, i, w'] += P[c, r, w, r + i, w']``. Then
    ``dK[i, j, c] = sum_w A[c, w, i, w + j]``, the diagonals of each
    ``W x Wp`` block, read by a skew reshape. Each step holds
    ``C R W (R + kh - 1) Wp`` floats; all its products run at matrix-multiply
    rates, ``Wp / kw`` times the direct method's count. Needs static
    ``H``, ``W``, ``Wp``.
    """
    batch, h, w, c = _shape(g)
    _, _, wp, _ = _shape(x_pad)
    rows = _ROWS_PER_STEP
    steps = -(-h // rows)
    # Zero output rows make `h` a multiple of `rows`; x_pad gets the rows they read.
    g = ops.pad(g, ((0, 0), (0, steps * rows - h), (0, 0), (0, 0)))
    x_pad = ops.pad(x_pad, ((0, 0), (0, steps * rows - h), (0, 0), (0, 0)))
    x_t = ops.transpose(x_pad, (3, 0, 1, 2))  # (C, B, Hp, Wp)
    g_t = ops.transpose(g, (3, 1, 2, 0))  # (C, H, W, B)
    span = rows + kh - 1

    def step(t, acc):
        x_rows = ops.slice(x_t, (0, 0, t * rows, 0), (c, batch, span, wp))
        g_rows = ops.slice(g_t, (0, t * rows, 0, 0), (c, rows, w, batch))
        prod = ops.matmul(ops.reshape(g_rows, (c, rows * w, -1)), ops.reshape(x_rows, (c, -1, span * wp)))
        prod = ops.reshape(prod, (c, rows, w, span, wp))
        for r in range(rows):
            acc = acc + prod[:, r, :, r : r + kh, :]
        return acc

    acc = ops.fori_loop(0, steps, step, ops.zeros((c, w, kh, wp), dtype=x_t.dtype))
    # Skew: row w of the flattened (W, Wp) block, re-cut at width Wp + 1, starts at A[w, w].
    flat = ops.reshape(ops.transpose(acc, (0, 2, 1, 3)), (c, kh, w * wp))
    flat = ops.pad(flat, ((0, 0), (0, 0), (0, w)))
    diagonals = ops.reshape(flat, (c, kh, w, wp + 1))[..., :kw]
    return ops.transpose(ops.sum(diagonals, axis=2), (1, 2, 0))


def _kernel_grad_form(out_size):
    """``"rows"`` or ``"fft"``: the faster kernel gradient (measured) for outputs of ``out_size``.

    ``out_size`` is ``(height, width)``, ints or, where a TensorFlow graph does
    not know them, scalar tensors (the row products need static sizes).
    """
    if any(ops.is_tensor(size) for size in out_size) or out_size[1] > _MAX_ROWS_GRAD_WIDTH:
        return "fft"
    return "rows"


def _kernel_grad(x_pad, g, kh, kw):
    """``dL/dK`` by the form :func:`_kernel_grad_form` picks."""
    if _kernel_grad_form(_shape(g)[1:3]) == "rows":
        return _kernel_grad_rows(x_pad, g, kh, kw)
    return _kernel_grad_fft(x_pad, g, kh, kw)


@functools.cache
def _stride1_op(pads, kernel_grad=True):
    """Stride-1 depthwise conv with padding ``pads`` and explicit gradients.

    With ``x_pad`` the padded input, ``dL/dx`` is the shifted sum of ``g``
    (padded by ``k - 1 - pad_before`` / ``k - 1 - pad_after``) with the flipped
    kernel, evaluated only on the input's own ``H x W`` grid. ``kernel_grad=False``
    (PyTorch, a kernel that does not require grad) leaves the kernel's gradient out.
    """
    (top, bottom), (left, right) = pads

    @ops.custom_gradient
    def op(inputs, kernel):
        kh, kw = kernel.shape[:2]
        _, h, w, _ = _shape(inputs)
        out_h, out_w = h + top + bottom - kh + 1, w + left + right - kw + 1
        x_pad = ops.pad(inputs, ((0, 0), (top, bottom), (left, right), (0, 0)))
        y = _shifted_sum(x_pad, kernel, out_h, out_w, (1, 1))

        def grad(*args, upstream=None):
            g = args[0] if upstream is None else upstream
            g_full = ops.pad(
                g, ((0, 0), (kh - 1 - top, kh - 1 - bottom), (kw - 1 - left, kw - 1 - right), (0, 0))
            )
            flipped = ops.flip(ops.flip(kernel, axis=0), axis=1)
            grad_x = _shifted_sum(g_full, flipped, h, w, (1, 1))
            return grad_x, _kernel_grad(x_pad, g, kh, kw) if kernel_grad else None

        return y, grad

    return op


def _needs_kernel_grad(kernel):
    """Whether the shifted op computes the kernel's gradient: always where a compiler drops an
    unused gradient (XLA, TensorFlow graphs: verified on JAX's compiled HLO); on PyTorch, whose
    eager autograd runs the whole backward rule, only for a kernel that requires grad (a frozen
    kernel variable does not), which made the frozen step no faster on this path."""
    if keras.backend.backend() != "torch":
        return True
    return bool(ops.convert_to_tensor(kernel).requires_grad)


def shifted_depthwise_conv2d(inputs, kernel, strides=(1, 1), padding="valid"):
    """Eq. (1) as a fused shifted sum (channels last, dilation 1).

    16-bit inputs are accumulated in float32, as native convolutions do.
    """
    dtype = keras.backend.standardize_dtype(inputs.dtype)
    if dtype in ("float16", "bfloat16"):
        outputs = shifted_depthwise_conv2d(
            ops.cast(inputs, "float32"), ops.cast(kernel, "float32"), strides, padding
        )
        return ops.cast(outputs, dtype)
    kernel = ops.cast(kernel, dtype)
    kh, kw, channels, multiplier = kernel.shape
    if multiplier > 1:
        inputs = ops.repeat(inputs, multiplier, axis=-1)
    kernel = ops.reshape(kernel, (kh, kw, channels * multiplier))
    _, in_h, in_w, _ = _shape(inputs)
    (top, bottom), (left, right) = _pad_amounts(in_h, in_w, kh, kw, strides, padding)
    out_h = _output_size(in_h + top + bottom, kh, strides[0])
    out_w = _output_size(in_w + left + right, kw, strides[1])
    if tuple(strides) == (1, 1):
        return _stride1_op(((top, bottom), (left, right)), _needs_kernel_grad(kernel))(inputs, kernel)
    # Pad (or crop) so each padded axis is exactly stride * (out + (k-1)//stride)
    # long, which the phase view in _tap needs.
    need_h = strides[0] * (out_h + (kh - 1) // strides[0])
    need_w = strides[1] * (out_w + (kw - 1) // strides[1])
    bottom = need_h - in_h - top
    right = need_w - in_w - left
    x_pad = ops.pad(inputs, ((0, 0), (top, _at_least_zero(bottom)), (left, _at_least_zero(right)), (0, 0)))
    x_pad = x_pad[:, :need_h, :need_w, :]
    return _shifted_sum(x_pad, kernel, out_h, out_w, strides)


def _torch_depthwise_conv2d(inputs, kernel, strides, padding, contiguous=None):
    """``contiguous``: convolve a contiguous NCHW copy of the input (default: on a GPU)
    rather than the channels-last view of its NHWC memory."""
    import torch

    inputs, kernel = ops.convert_to_tensor(inputs), ops.convert_to_tensor(kernel)
    kh, kw, channels, multiplier = kernel.shape
    # NHWC memory viewed as NCHW is PyTorch's channels_last format: no copy.
    x = inputs.permute(0, 3, 1, 2)
    if contiguous is None:
        # Compiled (torch.compile): inductor cannot order the channels-last view's symbolic strides
        # ("cannot determine truth value of Relational"), so it convolves a contiguous copy.
        contiguous = inputs.is_cuda or torch.compiler.is_compiling()
    if contiguous:
        x = x.contiguous()
    weight = kernel.reshape(kh, kw, 1, channels * multiplier).permute(3, 2, 0, 1)
    pad = 0
    if padding == "same":
        (top, bottom), (left, right) = _pad_amounts(x.shape[2], x.shape[3], kh, kw, strides, padding)
        if top == bottom and left == right:
            pad = (top, left)
        else:
            x = torch.nn.functional.pad(x, (left, right, top, bottom))
    y = torch.nn.functional.conv2d(x, weight, stride=tuple(strides), padding=pad, groups=channels)
    return y.permute(0, 2, 3, 1)


def check_implementation(implementation):
    """``implementation`` if it is one of :data:`IMPLEMENTATIONS`, else a ``ValueError`` naming it."""
    return validation.one_of(implementation, "implementation", IMPLEMENTATIONS)


#: ``implementation="auto"``'s path per (backend, where it computes), for trainable and frozen
#: kernels alike. "where": ``"cpu"``; ``"cpu-xla"`` (TensorFlow tracing a function XLA compiles);
#: ``"gpu"``. ``"shifted-large"``: the shifted sum for float32 kernels of at least
#: :data:`GPU_SHIFTED_MIN_KERNEL` taps a side, else the native op. Anything not listed: the native op
#: (``"torch"`` on PyTorch). One column, not one per kernel state: timed thawed and frozen on a
#: 2-core CPU (issue 51, ``benchmarks/results/cpu/frozen_speed.md``: a ConvMixer train step, every
#: path, k = 3, 7, 9, 15), the fastest path for a frozen kernel was the thawed one's in every case,
#: and on one H100 (``benchmarks/results/gpu/depthwise_speed.md``) the shifted sum beat XLA's
#: grouped convolution at k = 9 and 15, not at 7, frozen or not. A measurement where they differ
#: would bring the second column back.
AUTO_PATHS = {
    ("jax", "cpu"): "shifted",
    ("tensorflow", "cpu"): "native",
    ("tensorflow", "cpu-xla"): "shifted",
    ("torch", "cpu"): "torch",
    ("torch", "gpu"): "torch",
    ("jax", "gpu"): "shifted-large",
}


def _where(backend):
    device = accelerator()
    if device == "cpu" and backend == "tensorflow" and in_tf_xla_context():
        return "cpu-xla"
    return device


def select_implementation(
    implementation="auto", data_format="channels_last", dilation_rate=(1, 1), kernel_size=None, dtype=None
):
    """The path ``depthwise_conv2d`` takes: one of :data:`PATHS` (``"shifted"``, ``"torch"`` or
    ``"native"``).

    ``"auto"`` follows :data:`AUTO_PATHS` for the backend and where it computes; ``kernel_size``
    (``(kh, kw)``) and ``dtype`` (the inputs') decide its ``"shifted-large"`` entries (JAX on a
    GPU); without them, the native op there.
    """
    check_implementation(implementation)
    if data_format != "channels_last" or tuple(dilation_rate) != (1, 1):
        return "native"
    if implementation == "shifted":
        return "shifted"
    backend = keras.backend.backend()
    native = "torch" if backend == "torch" else "native"
    if implementation == "native":
        return native
    path = AUTO_PATHS.get((backend, _where(backend)), native)
    if path == "shifted-large":
        large = kernel_size is not None and min(kernel_size) >= GPU_SHIFTED_MIN_KERNEL and dtype == "float32"
        return "shifted" if large else native
    return native if path == "native" else path


def depthwise_conv2d(
    inputs,
    kernel,
    strides=(1, 1),
    padding="valid",
    data_format="channels_last",
    dilation_rate=(1, 1),
    implementation="auto",
):
    """Depthwise 2-D convolution (Eq. 1) by the fastest path for the backend.

    Same contract as ``keras.ops.depthwise_conv``: ``inputs`` ``(B, H, W, C)``
    (or channels first), ``kernel`` ``(kh, kw, C, m)``; the path is
    :func:`select_implementation`'s (a frozen kernel takes the same one: nothing consumes its
    gradient, which the compilers drop).
    """
    path = select_implementation(
        implementation,
        data_format,
        dilation_rate,
        tuple(kernel.shape[:2]),
        keras.backend.standardize_dtype(inputs.dtype),
    )
    return convolve_by_path(path, inputs, kernel, strides, padding, data_format, dilation_rate)


def convolve_by_path(
    path, inputs, kernel, strides=(1, 1), padding="valid", data_format="channels_last", dilation_rate=(1, 1)
):
    """:func:`depthwise_conv2d` by a path already chosen (one of :data:`PATHS`), so that a layer
    decides it once per call and records it."""
    validation.one_of(path, "path", PATHS)
    strides = tuple(strides)
    if path == "shifted":
        return shifted_depthwise_conv2d(inputs, kernel, strides, padding)
    if path == "torch":
        return _torch_depthwise_conv2d(inputs, kernel, strides, padding)
    return ops.depthwise_conv(
        inputs,
        kernel,
        strides=strides,
        padding=padding,
        data_format=data_format,
        dilation_rate=dilation_rate,
    )
