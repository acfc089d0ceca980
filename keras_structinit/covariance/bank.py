"""Per-layer filter statistics measured from a model, for transfer to another.

Trockman et al. (ICLR 2023, Sec. 2 and App. A) study the covariance of the
depthwise filters of a trained model: treating the ``H`` filters ``F_ih`` of
layer ``i`` as samples of a random ``k x k`` image, they estimate

* Eq. 3, the covariance ``Sigma_i = 1/H sum_h (vec F_ih - mu_i)(vec F_ih - mu_i)^T``
* Eq. 4, the mean ``mu_i = 1/H sum_h vec F_ih``

and initialize new models by sampling from them. :class:`FilterCovariance`
holds such a bank of ``(mu_i, Sigma_i)`` pairs together with each layer's depth
fraction, and optionally the patch size of the source model's patch embedding
(the stride of a ConvMixer's stem), which the covariances depend on but do not
record themselves. It can be measured from a model (:meth:`FilterCovariance.from_model`),
saved and loaded (``.npz``), queried at any depth (:meth:`at_depth`), moved to
another filter size (:meth:`resized`) and approximated by Kronecker products
(:meth:`kronecker`). All set-up math is NumPy float64.

This module holds the bank and its geometry; the ``.npz`` file and the config dict are
:mod:`.bank_io`'s (NumPy only), and reading a Keras model is :mod:`.measure`'s (imported
only by :meth:`FilterCovariance.from_model`): importing this module loads no Keras.

Vectors use the row-major flattening of the filter, the layout ``Sigma'`` of
:func:`keras_structinit.covariance.conv_covariance` (pixel ``(i, j)`` of a
``kh x kw`` filter is entry ``i * kw + j``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from keras_structinit.covariance import bank_io
from keras_structinit.covariance.bank_io import FORMAT_VERSION as FORMAT_VERSION  # where it was
from keras_structinit.covariance.closed_form import block_to_vector, two_d, vector_to_block
from keras_structinit.covariance.schedule import depth_fractions
from keras_structinit.utils import validation

__all__ = ["FilterCovariance"]

#: How :meth:`FilterCovariance.resized` can change the filter size.
RESIZE_METHODS = ("blocks", "crop", "interpolate")


def _depth_fraction(value, name):
    return validation.fraction(value, name, "a depth fraction in [0, 1]")


def _symmetry_tolerance(cov):
    return 1e-8 * max(1.0, float(np.max(np.abs(cov))))


class FilterCovariance:
    """A bank of per-layer filter means and covariances over depth.

    Args:
        means: list of ``(n,)`` arrays, one per source layer, ``n = kh * kw``.
        covariances: list of ``(n, n)`` symmetric arrays, same length.
        kernel_size: an int ``k`` or a tuple such as ``(kh, kw)`` with
            ``prod(kernel_size) == n``. :meth:`resized` and :meth:`kronecker`
            need 2-D filters; other methods accept any number of axes.
        depth_fractions: optional strictly increasing values in [0, 1], one per
            layer; defaults to ``i / (L - 1)`` (``[0.0]`` for one layer).
        layer_paths: optional list of ``L`` strings naming the source layers.
        source_name: optional name of the source model.
        patch_size: optional positive int, the patch size (stem stride) of
            the source model, or ``None`` when unknown or not patch-based.
            Metadata only: no method uses it in its math, but every bank
            derived from this one (:meth:`resized`, :meth:`kronecker`) keeps
            it, and :meth:`save` / :meth:`get_config` store it, so that a
            bank used on a model of another patch size says where it came
            from.

    Raises:
        ValueError: the bank is empty, shapes disagree, a value is NaN or
            infinite (the message names the layer index), a covariance is not
            symmetric, the depth fractions are invalid, or ``patch_size`` is
            an int below 1.
        TypeError: ``patch_size`` is neither ``None`` nor an int.

    The covariances are stored exactly symmetrized, ``(S + S^T) / 2``.
    """

    def __init__(
        self,
        means,
        covariances,
        kernel_size,
        depth_fractions=None,
        layer_paths=None,
        source_name=None,
        patch_size=None,
    ):
        self._kernel_size = validation.kernel_size(kernel_size)
        self._patch_size = validation.optional(validation.positive_int, patch_size, "patch_size")
        n = math.prod(self._kernel_size)
        means = list(means) if means is not None else []
        covariances = list(covariances) if covariances is not None else []
        if not means or not covariances:
            raise ValueError(
                "A FilterCovariance needs at least one layer: `means` and "
                "`covariances` must be non-empty lists."
            )
        if len(means) != len(covariances):
            raise ValueError(
                f"`means` has {len(means)} entries but `covariances` has "
                f"{len(covariances)}; they must have one entry per layer."
            )
        checked_means, checked_covs = [], []
        for index, (mean, cov) in enumerate(zip(means, covariances, strict=True)):
            mean = np.array(mean, dtype=np.float64)
            cov = np.array(cov, dtype=np.float64)
            if mean.shape != (n,):
                raise ValueError(
                    f"Layer {index}: the mean must have shape {(n,)} for "
                    f"kernel_size {self._kernel_size}. Received shape {mean.shape}."
                )
            if cov.shape != (n, n):
                raise ValueError(
                    f"Layer {index}: the covariance must have shape {(n, n)} "
                    f"for kernel_size {self._kernel_size}. Received shape "
                    f"{cov.shape}."
                )
            if not np.all(np.isfinite(mean)):
                raise ValueError(f"Layer {index}: the mean contains NaN or infinite values.")
            if not np.all(np.isfinite(cov)):
                raise ValueError(f"Layer {index}: the covariance contains NaN or infinite values.")
            asym = float(np.max(np.abs(cov - cov.T)))
            if asym > _symmetry_tolerance(cov):
                raise ValueError(
                    f"Layer {index}: the covariance is not symmetric (largest |S - S^T| entry is {asym:.3g})."
                )
            cov = 0.5 * (cov + cov.T)
            mean.setflags(write=False)
            cov.setflags(write=False)
            checked_means.append(mean)
            checked_covs.append(cov)
        self._means = checked_means
        self._covariances = checked_covs
        self._depth_fractions = self._check_depths(depth_fractions, len(checked_means))
        if layer_paths is not None:
            if isinstance(layer_paths, str) or len(layer_paths) != len(checked_means):
                raise ValueError(
                    "`layer_paths` must be a list with one string per layer "
                    f"({len(checked_means)}). Received: {layer_paths!r}"
                )
            layer_paths = [str(p) for p in layer_paths]
        self._layer_paths = layer_paths
        self._source_name = None if source_name is None else str(source_name)

    @staticmethod
    def _check_depths(depths, num_layers):
        if depths is None:
            return tuple(depth_fractions(num_layers))
        if isinstance(depths, str):
            raise ValueError(f"`depth_fractions` must be a list of numbers. Received: {depths!r}")
        depths = [_depth_fraction(d, "depth_fractions") for d in depths]
        if len(depths) != num_layers:
            raise ValueError(
                f"`depth_fractions` must have one value per layer ({num_layers}). "
                f"Received {len(depths)} values."
            )
        if any(b <= a for a, b in itertools.pairwise(depths)):
            raise ValueError(f"`depth_fractions` must be strictly increasing. Received: {depths!r}")
        return tuple(depths)

    # ------------------------------------------------------------------
    # Accessors
    # ------------------------------------------------------------------
    def __len__(self):
        return len(self._means)

    @property
    def kernel_size(self):
        """The filter size as a tuple, e.g. ``(7, 7)``."""
        return self._kernel_size

    @property
    def means(self):
        """List of read-only ``(n,)`` float64 mean filters (vector form)."""
        return list(self._means)

    @property
    def covariances(self):
        """List of read-only ``(n, n)`` float64 covariances (vector form)."""
        return list(self._covariances)

    @property
    def depth_fractions(self):
        """Tuple of the source layers' depth fractions."""
        return self._depth_fractions

    @property
    def layer_paths(self):
        """List of the source layers' paths, or ``None``."""
        return None if self._layer_paths is None else list(self._layer_paths)

    @property
    def source_name(self):
        """Name of the source model, or ``None``."""
        return self._source_name

    @property
    def patch_size(self):
        """Patch size (stem stride) of the source model, or ``None`` when unknown."""
        return self._patch_size

    def __repr__(self):
        patch = f", patch_size={self._patch_size}" if self._patch_size is not None else ""
        source = f", source_name={self._source_name!r}" if self._source_name else ""
        return f"FilterCovariance(num_layers={len(self)}, kernel_size={self._kernel_size}{patch}{source})"

    def _fields(self):
        """The constructor's arguments that give this bank (what :mod:`.bank_io` stores)."""
        return dict(
            means=self.means,
            covariances=self.covariances,
            kernel_size=self._kernel_size,
            depth_fractions=self._depth_fractions,
            layer_paths=self.layer_paths,
            source_name=self._source_name,
            patch_size=self._patch_size,
        )

    def _replace(self, means, covariances, kernel_size=None):
        fields = dict(self._fields(), means=means, covariances=covariances)
        if kernel_size is not None:
            fields["kernel_size"] = kernel_size
        return FilterCovariance(**fields)

    # ------------------------------------------------------------------
    # Measuring a model (Eq. 3, 4)
    # ------------------------------------------------------------------
    @classmethod
    def from_model(cls, model, layers=None, patch_size="infer"):
        """Measures the filter statistics of a built model's depthwise convs.

        The spatial depthwise/grouped convolutions are found with the
        package's model walker (:func:`keras_structinit.engine.walker.find_kernels`,
        model order). For layer ``i`` with kernel ``(kh, kw, a, b)`` the ``H = a * b``
        filters ``kernel[..., a_, b_]`` are flattened row-major; the mean is
        Eq. 4 and the covariance is Eq. 3 with the unbiased ``1 / (H - 1)``
        normalisation instead of ``1 / H`` (identical for the large ``H`` of
        real models, and unbiased for small ones).

        The bank's :attr:`patch_size` is, by default, read from the model's
        patch embedding: the first plain ``Conv2D`` of the model (in model
        order, nested models included; grouped convs do not count) whose
        kernel is square and equal to its strides, such as a ConvMixer's or
        ConvNeXt's stem, gives its kernel size; a model whose first plain
        ``Conv2D`` is anything else (a ResNet's 7x7 stride-2 stem), or that
        has none, gives ``None``.

        Args:
            model: a built ``keras.Model`` (or layer).
            layers: optional list of layer names or objects to restrict to.
            patch_size: ``"infer"`` (default: from the patch embedding, as
                above), or the value to store: a positive int or ``None``.

        Raises:
            ValueError: no spatial depthwise convs, a layer with fewer than two
                filters, layers whose kernel sizes differ, or a bad
                ``patch_size`` (``TypeError`` for one of the wrong type).
        """
        # Keras is needed only to measure (the glue of .measure); this module is NumPy only.
        from keras_structinit.covariance.measure import measure_model

        return cls(**measure_model(model, layers=layers, patch_size=patch_size))

    # ------------------------------------------------------------------
    # Saving and loading
    # ------------------------------------------------------------------
    def save(self, path, overwrite=False):
        """Writes the bank to a ``.npz`` file atomically; returns the path.

        As with ``numpy.savez``, ``.npz`` is appended when ``path`` lacks it.
        An existing file is replaced only with ``overwrite=True``.
        The file holds ``means`` ``(L, n)``, ``covariances`` ``(L, n, n)`` and
        ``metadata``, a JSON string with the format version, kernel size,
        depth fractions, layer paths, source name and source patch size
        (``null`` when unknown). The patch size was added to format version 1
        as an optional entry: files without it load with ``patch_size=None``,
        and readers that predate it ignore it.
        """
        return bank_io.save(self._fields(), path, overwrite=overwrite)

    @classmethod
    def load(cls, path):
        """Reads a bank written by :meth:`save` and validates it.

        Files written before the patch size was stored load with
        ``patch_size=None``.

        Raises:
            FileNotFoundError: neither ``path`` nor ``path + ".npz"`` exists.
            ValueError: the file is not a readable bank (corrupt, missing
                arrays, bad metadata, unsupported version or invalid values,
                including a stored patch size that is not a positive int).
        """
        return cls(**bank_io.load(path))

    def get_config(self):
        """A JSON-serializable dict that :meth:`from_config` turns back into this bank.

        Arrays are stored exactly, as base64 of their little-endian float64
        bytes (``L * n^2`` numbers would be several times larger as JSON
        lists). Initializer configs embed it, so ``.keras`` files hold the
        whole bank.
        """
        return bank_io.to_config(self._fields())

    @classmethod
    def from_config(cls, config):
        """The bank described by a :meth:`get_config` dict (configs without a
        ``patch_size`` entry, written before it existed, give ``None``)."""
        return cls(**bank_io.from_config(config))

    def structure(self):
        """Per-layer summary of how structured each covariance is.

        For layer ``i`` with covariance ``S`` (``n`` pixels, centre pixel
        ``c`` of the k x k grid, ``c = n // 2``): ``total_variance = tr S``;
        ``centre_ratio = S_cc / (tr S / n)``, the centre pixel's variance over
        the mean pixel variance (1 for i.i.d. filters such as PyTorch's
        uniform init; well above 1 for the centre-heavy covariances of
        trained models and of ``conv_covariance``); ``top_eigen_share =
        lambda_max / tr S`` (``1 / n`` for i.i.d. filters). Used to judge
        whether a source model has trained long enough for its bank to carry
        more than its initialization.
        """
        n = math.prod(self._kernel_size)
        centre = n // 2
        summary = []
        for cov in self._covariances:
            trace = float(np.trace(cov))
            top = float(np.linalg.eigvalsh(cov)[-1])
            summary.append(
                dict(
                    total_variance=trace,
                    centre_ratio=float(cov[centre, centre] / (trace / n)) if trace > 0 else float("nan"),
                    top_eigen_share=top / trace if trace > 0 else float("nan"),
                )
            )
        return summary

    # ------------------------------------------------------------------
    # Depth interpolation
    # ------------------------------------------------------------------
    def at_depth(self, depth_fraction):
        """``(mean, covariance)`` at ``depth_fraction`` in [0, 1].

        Linear interpolation between the two source layers whose depth
        fractions bracket it; exact at source depths. Outside the range
        of the source fractions (only possible with custom fractions) the
        nearest end layer is returned; a one-layer bank always returns its
        layer. Returns fresh float64 arrays.
        """
        depth = _depth_fraction(depth_fraction, "depth_fraction")
        fractions = self._depth_fractions
        if len(self) == 1 or depth <= fractions[0]:
            return self._means[0].copy(), self._covariances[0].copy()
        if depth >= fractions[-1]:
            return self._means[-1].copy(), self._covariances[-1].copy()
        upper = int(np.searchsorted(fractions, depth, side="right"))
        lower = upper - 1
        if depth == fractions[lower]:
            return self._means[lower].copy(), self._covariances[lower].copy()
        t = (depth - fractions[lower]) / (fractions[upper] - fractions[lower])
        mean = (1.0 - t) * self._means[lower] + t * self._means[upper]
        cov = (1.0 - t) * self._covariances[lower] + t * self._covariances[upper]
        return mean, cov

    # ------------------------------------------------------------------
    # Changing the filter size
    # ------------------------------------------------------------------
    def resized(self, kernel_size, method="blocks"):
        """A bank for filters of another size (2-D filters only).

        ``method="blocks"`` (the paper's construction; default): each
        covariance is put in block form (:func:`vector_to_block`): a
        ``kh x kw`` grid of blocks, block ``(i, j)`` being pixel ``(i, j)``'s
        covariance with every pixel as a ``kh x kw`` image. Then

        1. every block image is brought to the target size ``(th, tw)``,
           centre-aligned (centre pixel ``k // 2`` maps to ``t // 2``): grown by
           padding with that block's mean value, or shrunk by cropping;
        2. the grid of blocks is resampled to ``th x tw`` blocks by bilinear
           interpolation with aligned corners (block position ``t`` of ``T``
           reads source position ``t (K - 1) / (T - 1)``; a target of one block
           reads the source centre);
        3. the result is turned back with :func:`block_to_vector` and
           symmetrized.

        Steps 1 and 2 map a covariance's two pixel indices differently, so the
        result need not be a covariance of any filter distribution (it can be
        indefinite; sampling then uses ``psd``). Two consistent alternatives:

        * ``"crop"`` (shrinking only): ``Sigma' = Sigma[c, c]`` and
          ``mu' = mu[c]`` for the centre ``th x tw`` pixels ``c``: exactly the
          distribution of the centre of a source filter.
        * ``"interpolate"``: ``Sigma' = A Sigma A^T``, ``mu' = A mu`` with
          ``A = M_h kron M_w`` the aligned-corner bilinear interpolation
          matrices: exactly the distribution of a source filter resized
          bilinearly to the target size; positive semi-definite whenever
          ``Sigma`` is.

        Means follow the same map (``"blocks"``: padded with their own mean
        value or centre-cropped). The same size returns an identical bank. The
        metadata (depth fractions, layer paths, source name,
        :attr:`patch_size`) is kept: it describes the source model, whatever
        the filter size.

        Example:
            >>> small = bank.resized(5, method="crop")
        """
        validation.one_of(method, "method", RESIZE_METHODS)
        source = two_d(self._kernel_size)
        target = two_d(kernel_size)
        if target == source:
            return self._replace(self._means, self._covariances)
        kh, kw = source
        th, tw = target
        if method == "crop":
            if th > kh or tw > kw:
                raise ValueError(
                    f"`method='crop'` only shrinks filters; got kernel_size={target} for a bank of "
                    f"{source} filters. Use method='blocks' or 'interpolate' to grow them."
                )
            # The flat indices of the centre pixels: the block resize's own centre crop of an index image.
            keep = _fit_image(np.arange(kh * kw).reshape(kh, kw), target).reshape(-1)
            return self._replace(
                [m[keep] for m in self._means],
                [c[np.ix_(keep, keep)] for c in self._covariances],
                kernel_size=target,
            )
        if method == "interpolate":
            a = np.kron(_interpolation_matrix(kh, th), _interpolation_matrix(kw, tw))
            covariances = [a @ c @ a.T for c in self._covariances]
            return self._replace(
                [a @ m for m in self._means],
                [0.5 * (c + c.T) for c in covariances],
                kernel_size=target,
            )
        means = [_fit_image(mean.reshape(kh, kw), target).reshape(-1) for mean in self._means]
        covariances = [_resized_blocks(cov, source, target) for cov in self._covariances]
        return self._replace(means, covariances, kernel_size=target)

    # ------------------------------------------------------------------
    # Kronecker approximation
    # ------------------------------------------------------------------
    def kronecker(self):
        """Nearest Kronecker-structured covariances (Van Loan-Pitsianis).

        For a ``k x k`` filter, ``Sigma'[(i, j), (l, m)] = A[i, l] A[j, m]`` is
        exactly ``Sigma' = A kron A`` with ``numpy.kron``'s (row-major) index
        order, so the rearrangement ``R[(i, l), (j, m)] = Sigma'[(i, j), (l, m)]``
        (row ``(i, l)`` of ``R`` is block ``(i, l)`` of ``Sigma'`` flattened)
        turns ``Sigma' ~ A kron C`` into the rank-one problem ``R ~ vec(A)
        vec(C)^T``. This ``R`` is exactly :func:`vector_to_block` of ``Sigma'``.

        * Square filters: the nearest ``A kron A`` minimises ``||R - a a^T||``,
          whose solution only depends on the symmetric part ``(R + R^T) / 2``:
          ``a = sqrt(lambda) e`` for its largest eigenpair (``A = 0`` when
          ``lambda <= 0``). This is the exact optimum, and equals the
          Van Loan-Pitsianis ``sqrt(s) u``/``sqrt(s) v`` factors when those agree.
        * Non-square ``(kh, kw)`` filters: the two factors have different
          sizes, so the general ``A kron C`` from the leading singular triple
          ``s, u, v`` of ``R`` is used, ``A = sqrt(s) u``, ``C = sqrt(s) v``.

        Factors are reshaped row-major, symmetrized, and their common sign is
        chosen so that ``trace(A) >= 0``. Means are unchanged.

        Returns:
            ``(bank, errors)``: the Kronecker-structured bank and, per layer,
            the relative fit error ``||Sigma' - A kron C||_F / ||Sigma'||_F``
            (0 for a zero covariance).
        """
        kh, kw = two_d(self._kernel_size)
        covariances, errors = [], []
        for cov in self._covariances:
            r = vector_to_block(cov, (kh, kw))  # (kh*kh, kw*kw)
            if kh == kw:
                eigvals, eigvecs = np.linalg.eigh(0.5 * (r + r.T))
                lam = max(float(eigvals[-1]), 0.0)
                a = (math.sqrt(lam) * eigvecs[:, -1]).reshape(kh, kh)
                c = a
            else:
                u, s, vt = np.linalg.svd(r)
                a = (math.sqrt(s[0]) * u[:, 0]).reshape(kh, kh)
                c = (math.sqrt(s[0]) * vt[0]).reshape(kw, kw)
            a = 0.5 * (a + a.T)
            c = 0.5 * (c + c.T)
            if np.trace(a) < 0:
                a, c = -a, -c
            approx = np.kron(a, c)
            approx = 0.5 * (approx + approx.T)
            norm = float(np.linalg.norm(cov))
            errors.append(float(np.linalg.norm(cov - approx)) / norm if norm > 0 else 0.0)
            covariances.append(approx)
        return self._replace(self._means, covariances), errors


# ----------------------------------------------------------------------------
# Helpers for `resized`
# ----------------------------------------------------------------------------


def _resized_blocks(cov, source, target):
    """``FilterCovariance.resized``'s ``"blocks"`` construction of one covariance (its steps 1-3)."""
    (kh, kw), (th, tw) = source, target
    blocks = vector_to_block(cov, source).reshape(kh, kh, kw, kw)
    blocks = blocks.transpose(0, 2, 1, 3)  # [i, j, l, m]: block (i, j)
    fitted = np.empty((kh, kw, th, tw))
    for i in range(kh):
        for j in range(kw):
            fitted[i, j] = _fit_image(blocks[i, j], target)
    grid = _bilinear_grid(fitted, target)  # [I, J, l, m]
    blk = grid.transpose(0, 2, 1, 3).reshape(th * th, tw * tw)
    new_cov = block_to_vector(blk, target)
    return 0.5 * (new_cov + new_cov.T)


def _fit_image(image, target):
    """Centre-aligned pad (with the image's mean) or crop of a 2-D image."""
    out = image
    for axis, size in enumerate(target):
        k = out.shape[axis]
        if size > k:
            before = size // 2 - k // 2
            pad = [(0, 0), (0, 0)]
            pad[axis] = (before, size - k - before)
            out = np.pad(out, pad, mode="constant", constant_values=float(image.mean()))
        elif size < k:
            start = k // 2 - size // 2
            out = np.take(out, np.arange(start, start + size), axis=axis)
    return out


def _aligned_positions(source, target):
    """Source positions of ``target`` evenly spaced points, corners aligned."""
    if target == 1:
        return np.array([(source - 1) / 2.0])
    return np.arange(target) * ((source - 1) / (target - 1))


def _interpolation_matrix(source, target):
    """``(target, source)`` matrix of aligned-corner linear interpolation (rows sum to 1)."""
    pos = _aligned_positions(source, target)
    lo = np.clip(np.floor(pos).astype(int), 0, source - 1)
    hi = np.minimum(lo + 1, source - 1)
    frac = pos - lo
    matrix = np.zeros((target, source))
    rows = np.arange(target)
    np.add.at(matrix, (rows, lo), 1.0 - frac)
    np.add.at(matrix, (rows, hi), frac)
    return matrix


def _interp_axis(values, target, axis):
    """``values`` resampled to ``target`` points along ``axis`` (:func:`_interpolation_matrix`)."""
    matrix = _interpolation_matrix(values.shape[axis], target)
    return np.moveaxis(np.tensordot(matrix, values, axes=(1, axis)), 0, axis)


def _bilinear_grid(blocks, target):
    """Resamples the leading ``(K1, K2)`` grid of ``blocks`` to ``target``."""
    out = _interp_axis(blocks, target[0], axis=0)
    return _interp_axis(out, target[1], axis=1)
