"""``python -m genspirv`` and the ``genspirv`` console script: the command line (``genspirv.cli``)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
