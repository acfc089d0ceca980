"""``RecordFilterCovariance``: records a model's filter statistics while it trains."""

from __future__ import annotations

import keras

from keras_structinit import validation
from keras_structinit.covariance.bank import FilterCovariance

__all__ = ["RecordFilterCovariance"]


class RecordFilterCovariance(keras.callbacks.Callback):
    """Saves a :class:`FilterCovariance` bank of the model being trained.

    Covariance transfer (Trockman et al., ICLR 2023) works in two steps: train
    a small reference model once, measure the covariances of its depthwise
    filters, then initialize larger models (wider, deeper, other kernel sizes)
    from that bank. This callback does the measuring: attach it to the
    reference model's ``fit`` and load the resulting file with
    :meth:`FilterCovariance.load` to build initializers for the big models.

    The bank is written when training ends. With ``every_n_epochs=N`` it is
    also written after every ``N``-th epoch. If ``path`` contains an
    ``{epoch}`` placeholder (any format spec, e.g. ``"bank_{epoch:03d}.npz"``)
    it is filled with the 1-based epoch number (as in
    ``keras.callbacks.ModelCheckpoint``), so each snapshot gets its own file;
    otherwise ``path`` is overwritten each time. The end-of-training bank uses
    the number of the last finished epoch. Writes are atomic, and ``.npz`` is
    appended when missing.

    Banks are measured with :meth:`FilterCovariance.from_model`, so they also
    record the model's patch size when it has a patch embedding (a
    ConvMixer's stem), as :attr:`FilterCovariance.patch_size`.

    Args:
        path: str or ``os.PathLike`` destination.
        every_n_epochs: ``None`` (only at the end of training) or a positive
            int.

    Attributes:
        saved_paths: the files written so far, in order.
    """

    def __init__(self, path, every_n_epochs=None):
        super().__init__()
        self.path = validation.path(path, "path")
        self.every_n_epochs = validation.optional(validation.positive_int, every_n_epochs, "every_n_epochs")
        self.saved_paths = []
        self._last_epoch = 0  # 1-based number of the last finished epoch

    def _format_path(self, epoch):
        if "{epoch" not in self.path:
            return self.path
        try:
            return self.path.format(epoch=epoch)
        except (KeyError, IndexError, ValueError) as error:
            raise ValueError(
                f"`path` {self.path!r} could not be formatted with epoch={epoch}: {error}"
            ) from error

    def _save(self, epoch):
        bank = FilterCovariance.from_model(self.model)
        final = bank.save(self._format_path(epoch))
        self.saved_paths.append(final)
        return final

    def on_train_begin(self, logs=None):
        self._last_epoch = 0

    def on_epoch_end(self, epoch, logs=None):
        self._last_epoch = epoch + 1
        if self.every_n_epochs is not None and (epoch + 1) % self.every_n_epochs == 0:
            self._save(epoch + 1)

    def on_train_end(self, logs=None):
        self._save(self._last_epoch)

    def get_config(self):
        """The constructor arguments (callbacks are not serialized by Keras)."""
        return {"path": self.path, "every_n_epochs": self.every_n_epochs}
