"""Slots that higher modules fill for lower modules, which may not import them.

The walker resolves selector names that method records add (``"lc_pointwise"``,
``"mlp_first"``); the records live above it, so the registry hands its lookup down here when it
is imported (``keras_structinit`` imports it), instead of the walker importing the registry.
Likewise the facade hands down the one grammar of a model (:mod:`keras_structinit.models.spec`) to
the methods that take a model as text (a weight-selection teacher), and the registration of the
package's Keras objects (:mod:`keras_structinit._registry`) to the lazy namespaces and to what reads
model files.
"""

#: ``() -> {name: Selector}``: the selectors the method records add (set by the registry).
record_selectors = None

#: ``() -> None``: registers every serializable class of the package with Keras (importing Keras),
#: once; called before a model file's config is read (set by ``keras_structinit``).
register_serializables = None

#: ``(spec, *, name, max_model_bytes=None, **kwargs) -> keras.Model``: the model a model argument names,
#: read with the one grammar (:func:`keras_structinit.models.spec.load_model`), for the methods below
#: the models (a teacher given as text); set by ``keras_structinit``.
load_model = None

#: ``(spec, name) -> ModelSpec``: a model argument parsed by the one grammar
#: (:meth:`keras_structinit.models.spec.ModelSpec.parse`), nothing loaded; set by ``keras_structinit``.
parse_model = None

#: ``() -> None``: called after a lazy namespace handed out a name; registers as above once Keras is
#: loaded and no module of the package is being imported (set by ``keras_structinit``).
after_lookup = None
