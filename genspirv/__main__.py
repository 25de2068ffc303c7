"""``python -m genspirv`` and the ``genspirv`` console script: the command line.

A plain ``genspirv build`` that has nothing to do is answered first, from the
last no-op's stamp (``genspirv.build.noopreplay``), before the command line
parser and the build are imported; anything else goes to ``genspirv.cli``.
"""

import sys


def main() -> int:
    from .build.noopreplay import replay
    status = replay(sys.argv[1:])
    if status is not None:
        return status
    from .cli import main as cli_main
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
