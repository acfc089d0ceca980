"""``python -m keras_structinit.cli``: the ``structinit`` command."""

import sys

from keras_structinit.cli import main

sys.exit(main())
