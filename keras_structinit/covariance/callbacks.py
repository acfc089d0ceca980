"""``RecordFilterCovariance``: records a model's filter statistics while it trains."""

from __future__ import annotations

import keras

from keras_structinit.covariance.bank import FilterCovariance
from keras_structinit.utils import validation
from keras_structinit.utils.io_utils import check_output

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
    appended when missing. A file that exists before training (an earlier
    run's) is replaced only with ``overwrite=True``; without it, training
    stops at its start (or, for an ``{epoch}`` path, at that epoch's write).

    Banks are measured with :meth:`FilterCovariance.from_model`, so they also
    record the model's patch size when it has a patch embedding (a
    ConvMixer's stem), as :attr:`FilterCovariance.patch_size`.

    Args:
        path: str or ``os.PathLike`` destination.
        every_n_epochs: ``None`` (only at the end of training) or a positive
            int.
        overwrite: replace files that existed before this run.

    Attributes:
        saved_paths: the files written so far, in order.
    """

    def __init__(self, path, every_n_epochs=None, overwrite=False):
        super().__init__()
        self.path = validation.path(path, "path")
        self.every_n_epochs = validation.optional(validation.positive_int, every_n_epochs, "every_n_epochs")
        self.overwrite = validation.boolean(overwrite, "overwrite")
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
        path = self._format_path(epoch)
        final = bank.save(path, overwrite=self.overwrite or _npz(path) in self.saved_paths)
        self.saved_paths.append(final)
        return final

    def on_train_begin(self, logs=None):
        self._last_epoch = 0
        path = _npz(self.path)
        if "{epoch" not in self.path and path not in self.saved_paths:  # refused now, not after an epoch
            check_output(path, "path", overwrite=self.overwrite)

    def on_epoch_end(self, epoch, logs=None):
        self._last_epoch = epoch + 1
        if self.every_n_epochs is not None and (epoch + 1) % self.every_n_epochs == 0:
            self._save(epoch + 1)

    def on_train_end(self, logs=None):
        self._save(self._last_epoch)

    def get_config(self):
        """The constructor arguments (callbacks are not serialized by Keras)."""
        return {"path": self.path, "every_n_epochs": self.every_n_epochs, "overwrite": self.overwrite}


def _npz(path):
    """``path`` as :meth:`FilterCovariance.save` writes it."""
    return path if path.endswith(".npz") else path + ".npz"
