"""``python -m genspirv`` and the ``genspirv`` console script: the command line.

A plain ``genspirv build`` that has nothing to do is answered first, from the
last no-op's stamp (``genspirv.buildsys.noopreplay``), before the command line
parser and the build are imported. A plain build of a project with no state
starts its early reads (``genspirv.buildsys.early``); then the command goes to
``genspirv.cli``.
"""

import sys


def main() -> int:
    from .buildsys.noopreplay import plain_build_root, replay
    status = replay(sys.argv[1:])
    if status is not None:
        return status
    # A plain build of a project with no state yet (a fresh clone): its reads start now, in a
    # forked child, while the command line and the build are imported (genspirv.buildsys.early).
    from .buildsys.early import start_early_reads
    start_early_reads(plain_build_root(sys.argv[1:]))
    from .cli import main as cli_main
    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
