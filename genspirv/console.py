"""What a command prints besides its results: build progress, and colour for errors.

``Progress`` takes the build's log lines and gives them to a terminal as one
``[n/N] name`` line rewritten in place (piped: one full line each);
``colourise`` paints ``error:`` red and ``warning:`` yellow, as compilers do,
where ``use_colour`` says the stream is a terminal and ``NO_COLOR`` is unset.
"""

from __future__ import annotations

import os
import re
import shlex
import sys


def use_colour(stream) -> bool:
    """Colour on a terminal, unless NO_COLOR is set (https://no-color.org)."""
    return not os.environ.get("NO_COLOR") and hasattr(stream, "isatty") and stream.isatty()


_SEVERITY = re.compile(r"(?m)(^genspirv: error:|(?<=\d: )error:|(?<=\d: )warning:)")


def colourise(text: str) -> str:
    """'error:' red, 'warning:' yellow, as compilers print them."""
    return _SEVERITY.sub(lambda m: ("\033[1;31m" if "error" in m.group() else "\033[1;33m")
                         + m.group() + "\033[0m", text)


PROGRESS_LINE = re.compile(r"^\[\d+/\d+\] \S+$")     # "[12/400] matmul_f16"; a failure has more words
VARIANT_LINE = re.compile(r"^\[\d+/\d+\] ")          # any per-variant line, failures too: what -q drops


class Progress:
    """Build progress: on a terminal one line rewritten in place, piped one full line each.

    ``[n/N] name`` lines are progress; anything else (a failure, a removal, a
    command line under -v) is printed in full above the progress line.
    """

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.pending = False          # a progress line is on screen without its newline

    def __call__(self, line: str) -> None:
        if self.tty and PROGRESS_LINE.match(line):
            self.stream.write("\r\033[K" + line)
            self.pending = True
        else:
            self.clear()
            self.stream.write(line + "\n")
        self.stream.flush()

    def command(self, argv) -> None:
        self(shlex.join(str(a) for a in argv))

    def clear(self) -> None:
        if self.pending:
            self.stream.write("\r\033[K")
            self.pending = False

    def close(self) -> None:
        self.clear()
        self.stream.flush()
