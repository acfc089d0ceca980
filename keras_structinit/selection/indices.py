"""Which teacher elements and layers a student keeps (pure NumPy; no Keras import).

Weight selection (Xu et al., "Initializing Models with Larger Ones", ICLR 2024)
copies into a student of size ``s`` along an axis the teacher's entries at
``s`` indices out of ``t``; and into a student of ``Ns`` blocks the teacher's
blocks at ``Ns`` indices out of ``Nt``.

Element rules (:data:`ELEMENT_METHODS`):

* ``"uniform"`` (Alg. 1 of the paper): ``arange(s) * (t // s)`` when ``s``
  divides ``t``, else ``round(linspace(0, t - 1, s))`` (round half to even,
  as NumPy and ``torch.round`` do), in float64 as NumPy computes it (so a
  tie such as ``11 * 25/22 = 12.5`` may land on either side by rounding
  error). A 4x6 teacher gives a 2x3 student rows ``{0, 2}`` and columns
  ``{0, 2, 4}``. The authors' current script (``weight_selection.py``)
  computes ``torch.round(torch.linspace(0, t - 1, s)).long()``, the same rule
  in float32: the two differ only where an entry lies within float32 error of
  a .5 tie. (An earlier version rounded ``linspace(0, t, s)``, whose last
  index ``t`` is out of range.)
* ``"consecutive"``: ``arange(s)``.
* ``"random"`` and ``"random_inconsistent"``: ``s`` sorted indices drawn
  without replacement; the first is drawn once per dimension role and shared
  by every tensor with that role, the second afresh per tensor (the paper's
  ablation). Which one applies is the caller's bookkeeping; here both draw.
* ``"l1"`` and ``"magnitude"``: the pruning baselines of the paper's Table 7
  ("Comparison with pruning", Sec. 5), which read the teacher's values
  (:data:`VALUE_METHODS`; :func:`l1_indices`, :func:`magnitude_elements`).
  The paper gives one sentence each and its public code (``weight_selection.py``,
  the notebook) has no pruning code, so the rules follow the text and the
  pruning functions it cites, as PyTorch's ``torch.nn.utils.prune`` computes
  them. ``"l1"`` (L1 structured pruning, Li et al. 2017): along each axis
  that shrinks, keep the ``s`` slices with the largest L1 norm (the sum of
  ``|w|`` over every other axis of that tensor; ``prune.ln_structured(n=1)``),
  per tensor: tensors that share a dimension get their own indices, which
  is why the paper says "L1 norm inevitably breaks consistency".
  ``"magnitude"`` (magnitude pruning, Han et al. 2015;
  ``prune.l1_unstructured``): keep the tensor's ``prod(student shape)``
  elements of largest ``|w|`` and "squeeze [them] into the required shape of
  student": the kept elements in their order in the teacher's flattened
  (row-major) tensor, reshaped to the student's shape.
  Ties go to the lower index (a stable sort) in both.

Layer rules (:data:`LAYER_METHODS`): ``"first_n"`` (the paper's default),
``"last_n"``, ``"mid_n"`` (the ``Ns`` central blocks) and ``"uniform"``
(``round(linspace(0, Nt - 1, Ns))``).
"""

from __future__ import annotations

import numpy as np

from keras_structinit.utils import validation

__all__ = [
    "ELEMENT_METHODS",
    "LAYER_METHODS",
    "VALUE_METHODS",
    "element_indices",
    "l1_indices",
    "layer_indices",
    "magnitude_elements",
]

ELEMENT_METHODS = ("uniform", "consecutive", "random", "random_inconsistent", "l1", "magnitude")
#: The element methods that read the teacher's values, per tensor (Table 7's pruning baselines).
VALUE_METHODS = ("l1", "magnitude")
LAYER_METHODS = ("first_n", "last_n", "mid_n", "uniform")


def _sizes(teacher_size, student_size, what):
    teacher_size = validation.positive_int(teacher_size, "teacher_size")
    student_size = validation.positive_int(student_size, "student_size")
    if student_size > teacher_size:
        raise ValueError(
            f"The student is larger than the teacher along {what}: student_size={student_size} > "
            f"teacher_size={teacher_size}; selection only shrinks."
        )
    return teacher_size, student_size


def element_indices(teacher_size, student_size, method="uniform", rng=None, what="an axis"):
    """Indices (int64, increasing) of the ``student_size`` of ``teacher_size`` entries kept.

    Args:
        teacher_size: ``t``, the teacher's length along the axis.
        student_size: ``s <= t``, the student's.
        method: one of :data:`ELEMENT_METHODS` but :data:`VALUE_METHODS` (see the module
            docstring; those read values: :func:`l1_indices`, :func:`magnitude_elements`).
        rng: a ``numpy.random.Generator`` or an int seed for the random
            methods (default: seed 0).
        what: how errors name the axis, e.g. ``"axis 1 of 'block_1/fc1/kernel'"``.

    Example:

    >>> element_indices(6, 3)
    array([0, 2, 4])
    >>> element_indices(7, 3)  # round(linspace(0, 6, 3)) = round([0, 3, 6])
    array([0, 3, 6])
    """
    t, s = _sizes(teacher_size, student_size, what)
    validation.one_of(method, "method", ELEMENT_METHODS)
    if method in VALUE_METHODS:
        raise ValueError(
            f"`method`={method!r} reads the teacher's values: use "
            f"{'l1_indices' if method == 'l1' else 'magnitude_elements'}(array, ...)."
        )
    if method == "consecutive":
        return np.arange(s, dtype=np.int64)
    if method == "uniform":
        if t % s == 0:
            return np.arange(s, dtype=np.int64) * (t // s)
        return np.round(np.linspace(0, t - 1, s)).astype(np.int64)
    rng = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng or 0)
    return np.sort(rng.choice(t, size=s, replace=False)).astype(np.int64)


def layer_indices(teacher_depth, student_depth, method="first_n", what="the blocks"):
    """Indices of the teacher's blocks that the student's blocks come from, in order.

    ``"first_n"``: ``0 .. Ns-1``; ``"last_n"``: ``Nt-Ns .. Nt-1``; ``"mid_n"``:
    the ``Ns`` blocks starting at ``(Nt - Ns) // 2``; ``"uniform"``:
    ``round(linspace(0, Nt - 1, Ns))``.

    >>> layer_indices(12, 4, "uniform")
    array([ 0,  4,  7, 11])
    """
    t, s = _sizes(teacher_depth, student_depth, what)
    validation.one_of(method, "method", LAYER_METHODS)
    if method == "first_n":
        start = 0
    elif method == "last_n":
        start = t - s
    elif method == "mid_n":
        start = (t - s) // 2
    else:
        return np.round(np.linspace(0, t - 1, s)).astype(np.int64)
    return np.arange(start, start + s, dtype=np.int64)


def _finite_array(array, what):
    array = np.asarray(array, dtype=np.float64)
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{what} has non-finite (NaN or inf) values: no L1 norm or magnitude to rank.")
    return array


def l1_indices(array, axis, student_size, what="an axis"):
    """Indices (int64, increasing) of the ``student_size`` slices of ``array`` along ``axis`` with the
    largest L1 norm (``sum |w|`` over every other axis): L1 structured pruning of one tensor.

    >>> l1_indices([[1.0, -5.0, 0.0], [2.0, 1.0, 0.5]], 1, 2)  # column norms 3, 6, 0.5
    array([0, 1])
    """
    array = _finite_array(array, what)
    axis = validation.int_value(axis, "axis")
    if not -array.ndim <= axis < array.ndim:
        raise ValueError(f"`axis`={axis} is out of range for an array of {array.ndim} dimension(s).")
    _, s = _sizes(array.shape[axis], student_size, what)
    others = tuple(a for a in range(array.ndim) if a != axis % array.ndim)
    norms = np.abs(array).sum(axis=others)
    return np.sort(np.argsort(-norms, kind="stable")[:s]).astype(np.int64)


def magnitude_elements(array, student_shape, what="a tensor"):
    """Flat (row-major) indices, increasing, of the ``prod(student_shape)`` elements of ``array`` with the
    largest ``|w|``: magnitude pruning of one tensor; ``array.ravel()[indices].reshape(student_shape)``
    is the squeezed student value.

    >>> magnitude_elements([[1.0, -5.0], [0.5, 2.0]], (2,))  # |w| 5 and 2
    array([1, 3])
    """
    array = _finite_array(array, what)
    shape = validation.positive_ints(tuple(student_shape), "student_shape")
    _, k = _sizes(array.size, int(np.prod(shape, dtype=np.int64)), f"{what} (its number of elements)")
    return np.sort(np.argsort(-np.abs(array).ravel(), kind="stable")[:k]).astype(np.int64)
