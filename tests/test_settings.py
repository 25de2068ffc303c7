"""The settings table: one row per GENSPIRV_* variable, read and checked in one place."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from genspirv import settings
from genspirv.errors import GenspirvError
from genspirv.settings import SETTINGS, SettingError, get

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "genspirv"
TABLE_START = "<!-- settings table: generated from genspirv/settings.py (markdown_table) -->\n"
TABLE_END = "\n<!-- end of settings table -->"


def test_defaults_when_unset_or_empty():
    for row in SETTINGS:
        assert get(row.name, {}) == row.default
        assert get(row.name, {row.name: ""}) == row.default


@pytest.mark.parametrize("name, good, value", [
    ("GENSPIRV_INFLIGHT", "4", 4), ("GENSPIRV_BATCH", " 8 ", 8), ("GENSPIRV_BARRIERS", "always", "always"),
    ("GENSPIRV_HOST_PROFILE", "1", True), ("GENSPIRV_HOST_PROFILE", "0", False),
    ("GENSPIRV_COMPUTE_STREAM_COPY_MAX", "0", 0), ("GENSPIRV_LOCK_TIMEOUT", "0", 0.0),
    ("GENSPIRV_COMPILER_TIMEOUT", "0.5", 0.5), ("GENSPIRV_DEVICE", "llvmpipe", "llvmpipe"),
])
def test_good_values(name, good, value):
    assert get(name, {name: good}) == value


@pytest.mark.parametrize("name, bad, allowed", [
    ("GENSPIRV_INFLIGHT", "5", "1..4"), ("GENSPIRV_INFLIGHT", "two", "1..4"),
    ("GENSPIRV_BATCH", "0", "1 or more"), ("GENSPIRV_BATCH", "lots", "1 or more"),
    ("GENSPIRV_BARRIERS", "sometimes", "smart, always or none"),
    ("GENSPIRV_UPLOAD", "lazy", "staged or blocking"), ("GENSPIRV_HOST_PROFILE", "yes", "0 or 1"),
    ("GENSPIRV_COMPUTE_STREAM_COPY_MAX", "-1", "a byte count, 0 or more"),
    ("GENSPIRV_COMPILER_TIMEOUT", "0", "a positive number of seconds"),
    ("GENSPIRV_COMPILER_TIMEOUT", "nan", "a positive number of seconds"),
    ("GENSPIRV_COMPILER_MEMORY_MB", "1.5", "a positive number of MiB"),
    ("GENSPIRV_LOCK_TIMEOUT", "-1", "a number of seconds, 0 or more"),
])
def test_bad_values_name_the_variable_and_what_it_allows(name, bad, allowed):
    with pytest.raises(SettingError) as info:
        get(name, {name: bad})
    message = str(info.value)
    assert name in message and repr(bad) in message and allowed in message
    assert isinstance(info.value, GenspirvError) and info.value.exit_code == 2


def test_a_negative_lock_timeout_is_refused(tmp_path, monkeypatch):
    from genspirv.statedir import project_lock
    monkeypatch.setenv("GENSPIRV_LOCK_TIMEOUT", "-5")
    with pytest.raises(SettingError, match="GENSPIRV_LOCK_TIMEOUT must be a number of seconds, 0 or more"):
        with project_lock(tmp_path):
            pass


def _sources() -> dict[Path, str]:
    """The package's sources, and the checkout's benchmarks and demo, which read their settings
    through the same table."""
    folders = (PACKAGE, ROOT / "benchmarks", ROOT / "examples")
    return {p: p.read_text() for folder in folders for p in folder.rglob("*.py") if p.name != "settings.py"}


def test_every_variable_is_read_through_the_table():
    direct = re.compile(r"""(environ(\.get)?\s*[\(\[]|getenv\s*\()\s*["']GENSPIRV_""")
    offenders = [str(p.relative_to(ROOT)) for p, text in _sources().items() if direct.search(text)]
    assert offenders == []
    read = {m for text in _sources().values() for m in re.findall(r"""settings\.get\(\s*["'](GENSPIRV_\w+)""", text)}
    from genspirv.toolchain.tools import WHEEL_OF, env_override_name
    read |= {env_override_name(tool) for tool in WHEEL_OF}
    assert read == {row.name for row in SETTINGS}     # no row nothing reads, no read without a row


def test_the_guide_shows_the_table():
    guide = (ROOT / "docs" / "GUIDE.md").read_text()
    start = guide.index(TABLE_START) + len(TABLE_START)
    assert guide[start:guide.index(TABLE_END, start)] == settings.markdown_table()


def test_the_readme_names_only_variables_of_the_table_with_their_defaults():
    readme = (ROOT / "README.md").read_text()
    rows = {row.name: row for row in SETTINGS}
    named = set(re.findall(r"GENSPIRV_[A-Z0-9_]*[A-Z0-9]", readme))
    assert named and named <= set(rows)
    for name, default in re.findall(r"`(GENSPIRV_\w+)`[^`]{0,30}?default (\d+)", readme):
        assert float(default) == rows[name].default, name
