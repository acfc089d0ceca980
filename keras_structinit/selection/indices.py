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

Layer rules (:data:`LAYER_METHODS`): ``"first_n"`` (the paper's default),
``"last_n"``, ``"mid_n"`` (the ``Ns`` central blocks) and ``"uniform"``
(``round(linspace(0, Nt - 1, Ns))``).
"""

from __future__ import annotations

import numpy as np

from keras_structinit import validation

__all__ = ["ELEMENT_METHODS", "LAYER_METHODS", "element_indices", "layer_indices"]

ELEMENT_METHODS = ("uniform", "consecutive", "random", "random_inconsistent")
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
        method: one of :data:`ELEMENT_METHODS` (see the module docstring).
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
