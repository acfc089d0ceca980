"""What acts on any model, whatever its method: the walker, the model-function contract,
seeded initializers, frozen filters, heads, re-initialization, evaluation, loading (internal)."""
