"""``keras.Initializer`` subclasses of every method (declared in the method records; imported on use)."""

from keras_structinit import methods
from keras_structinit._lazy import lazy_exports

__getattr__, __dir__, _ = lazy_exports(__name__, {}, lambda: methods.namespace_exports("initializers"))
