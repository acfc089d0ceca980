"""The core's own record (:mod:`.method`): the ``default`` form (no init) and the functions that act on
any model (``initialize``, ``freeze_spatial``, ``reinitialize``, ...), which live in the core's modules
and are exported into ``keras_structinit``.

It sits in a folder as each method's record does, so :func:`keras_structinit.methods.method_records` finds it
the same way (first, by its ``order``); it is no method, and it holds no code of its own.
"""
