"""``python -m examples.llm [OPTIONS]``: the decode demo, from a checkout (``examples.llm.demo``)."""

import sys

from .demo import main

sys.exit(main())
