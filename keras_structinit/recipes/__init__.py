"""Training recipes built on ``model.fit``."""
