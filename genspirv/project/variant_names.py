"""Variant names: the rule, its checks, and the fix a refusal suggests.

Takes a name (or a source path, or a matrix combination) and the config key
it came from; gives the name back, or raises ``ConfigError`` saying why it
cannot be one and what would work. A variant's name becomes a file name
(``<spirv_dir>/<name>.spv``) and a C identifier in generated code, so names
keep to letters, digits and ``_``, not starting with a digit.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from ..errors import ConfigError

NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

NAME_RULE = "letters, digits and _, not starting with a digit: it names a blob file and a C identifier"


def suggested_name(text: str) -> str:
    """``text`` made a valid variant name: every other character becomes _, a leading digit gets one."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", text)
    return name if NAME_RE.match(name) else f"_{name}"


def check_name(name: str, key: str) -> str:
    """``name``, or a refusal naming ``key`` with a name that would do."""
    if not NAME_RE.match(name):
        raise ConfigError(f"{key}: {name!r} is not a valid variant name ({NAME_RULE}); "
                          f"try {suggested_name(name)!r}")
    return name


def check_stem(source: str, source_key: str) -> str:
    """A source's file stem as its variant name prefix, or the fix when it cannot be one."""
    stem = PurePosixPath(source).stem
    if not NAME_RE.match(stem):
        raise ConfigError(f"{source}: the file stem {stem!r} is not a valid variant name ({NAME_RULE}); "
                          f"rename the file, or give its variants a name in pyproject.toml: "
                          f'[tool.genspirv.shaders."{source_key}"] name = "{suggested_name(stem)}"')
    return stem


def check_matrix_name(name: str, combo: list[tuple[str, str, str]], key: str) -> str:
    """A matrix variant's name; refused naming the value whose alias made it invalid."""
    bad = [(define, alias) for define, alias, _ in combo if not re.fullmatch(r"[A-Za-z0-9_]+", alias)]
    if NAME_RE.match(name) or not bad:
        return check_name(name, key)
    define, alias = bad[0]
    raise ConfigError(f"{key}.{define}: the value {alias!r} gives the variant name {name!r}, which is not a "
                      f"valid variant name ({NAME_RULE}); give the value an alias: "
                      f'{define} = {{ {suggested_name(alias).strip("_") or "a"} = "{alias}" }}')
