"""``python -m genspirv``: the same as the ``genspirv`` console script."""

import sys

from .cli import main

sys.exit(main())
