"""``python -m benchmarks SUITE``: genspirv's benchmarks, from a checkout (``benchmarks.main``)."""

import sys

from . import main

sys.exit(main())
