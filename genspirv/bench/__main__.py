"""``python -m genspirv.bench SUITE``: the same as ``genspirv bench SUITE``."""

import sys

from . import main

sys.exit(main())
