"""Run the genspirv CLI on a slow disk: every fsync takes GENSPIRV_TEST_FSYNC_DELAY seconds.

    python tests/faults/slow_disk.py build --force --root DIR

The interrupt test uses it to widen the window in which a build writes its
outputs, so that SIGKILLs land between one atomic write and the next; it prints
"slow-disk: fsync" on stderr before each one. Nothing else changes: the files, their order and the renames are the build's own.
"""

import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

DELAY = float(os.environ.get("GENSPIRV_TEST_FSYNC_DELAY", "0.03"))
_real_fsync = os.fsync


def slow_fsync(fd: int) -> None:
    # The marker tells a watching test that the writes have begun.
    sys.stderr.write("slow-disk: fsync\n")
    sys.stderr.flush()
    time.sleep(DELAY)
    _real_fsync(fd)


os.fsync = slow_fsync

if __name__ == "__main__":
    from genspirv.cli import main
    sys.exit(main(sys.argv[1:]))
