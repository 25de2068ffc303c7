"""The user guide's examples run, in order, and say what they show.

docs/GUIDE.md is a walkthrough in one scratch folder. A fenced block whose info
string holds the word ``test`` is run (other blocks are only shown):

- ``console test``: each ``$ command`` runs in bash in the current folder
  (``cd`` changes it for later blocks); the lines after it are its output,
  stdout and stderr as a terminal interleaves them, line for line: a
  transcript shows what the command really prints. ``...`` inside a line
  matches any text; a line that is only ``...`` stands for any number of
  lines left out (also none). Blank lines are not compared. A command exits
  0 unless it ends in ``# exit N``.
- ``python test``: runs as a script in the current folder; its asserts are the check.
  A ``text test`` block right after it is its output, matched the same way.
- ``LANG test file=PATH``: the block's text is written to PATH; ``append=PATH``
  appends it; ``quote=PATH``: the block must appear verbatim in that file (docs
  that quote generated files stay true).
- ``needs=TOOL``: skipped where TOOL is not on PATH; ``needs=vulkan``: where
  no Vulkan device can be opened; ``needs=vulkan-validation``: where the
  Khronos validation layer cannot be enabled; ``needs=slang-glslang``: where
  the ``slang-glslang`` extra is not installed.

`genspirv` on PATH is this source tree (a shim), whatever else is installed.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
GUIDE = REPO / "docs" / "GUIDE.md"
TIMEOUT = 300

FENCE = re.compile(r"^```([^\n`]*)\n(.*?)^```[ \t]*$", re.M | re.S)
EXIT_COMMENT = re.compile(r"\s+#\s*exit\s+(\d+)\b.*$")


@dataclass(frozen=True)
class Block:
    line: int          # 1-based line of the opening fence
    lang: str
    options: dict[str, str]
    text: str

    @property
    def id(self) -> str:
        return f"L{self.line}-{self.lang}"


def parse_blocks(markdown: str) -> list[Block]:
    blocks = []
    for m in FENCE.finditer(markdown):
        words = m.group(1).split()
        if "test" not in words[1:]:
            continue
        options = dict(w.split("=", 1) for w in words[1:] if "=" in w)
        line = markdown.count("\n", 0, m.start()) + 1
        blocks.append(Block(line, words[0], options, m.group(2)))
    return blocks


ELISION = "..."


def _line_pattern(want: str) -> re.Pattern:
    return re.compile(".*".join(re.escape(part) for part in want.strip().split(ELISION)))


def transcript_mismatch(expected: list[str], output: str) -> str | None:
    """None if ``output`` is the transcript ``expected``, line for line; else where they part.

    A line of the transcript that is only ``...`` matches any run of output lines
    (also none); ``...`` inside a line matches any text. Blank lines and trailing
    blanks are not compared.
    """
    want = [w.strip() for w in expected if w.strip()]
    got = [g.strip() for g in output.splitlines() if g.strip()]
    patterns = [None if w == ELISION else _line_pattern(w) for w in want]
    # reach[j]: the output lines matched so far may end right before got[j]
    reach = {0}
    for i, pattern in enumerate(patterns):
        before = reach
        if pattern is None:
            reach = set(range(min(reach), len(got) + 1))
        else:
            reach = {j + 1 for j in reach if j < len(got) and pattern.fullmatch(got[j])}
        if not reach:
            there = max(before)
            printed = f"the command printed {got[there]!r} there" if there < len(got) else "the output ended"
            shown = "\n".join(f"    {g}" for g in got) or "    (nothing)"
            return f"transcript line {want[i]!r} does not match: {printed}; the whole output:\n{shown}"
    if len(got) not in reach:
        extra = got[max(reach)] if reach else got[0]
        return f"the command printed a line the transcript does not show: {extra!r}"
    return None


def console_steps(text: str) -> list[tuple[str, int, list[str]]]:
    """(command, expected exit status, expected output lines) for each ``$`` line."""
    steps: list[tuple[str, int, list[str]]] = []
    for raw in text.splitlines():
        if raw.startswith("$ "):
            command = raw[2:]
            status = 0
            m = EXIT_COMMENT.search(command)
            if m:
                status = int(m.group(1))
                command = command[:m.start()]
            steps.append((command, status, []))
        elif raw.strip() and steps:
            steps[-1][2].append(raw)
    return steps


@dataclass
class Walkthrough:
    """The scratch folder's state as the guide's blocks go by."""

    cwd: Path
    env: dict[str, str]
    results: dict[str, str] = field(default_factory=dict)    # block id -> "" (ok) or why not
    failed: str | None = None
    last_python_output: str | None = None

    def run(self, block: Block) -> str:
        if self.failed:
            return f"not reached: {self.failed} failed"
        needs = block.options.get("needs")
        if needs and not have(needs, self.env):
            return f"skip: needs {needs}"
        try:
            self._run(block)
        except AssertionError as exc:
            self.failed = f"GUIDE.md block at line {block.line}"
            return f"{self.failed}: {exc}"
        return ""

    def _run(self, block: Block) -> None:
        opts = block.options
        if "file" in opts:
            target = self.cwd / opts["file"]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text)
        elif "append" in opts:
            with open(self.cwd / opts["append"], "a") as f:
                f.write(block.text)
        elif "quote" in opts:
            actual = (self.cwd / opts["quote"]).read_text()
            assert block.text in actual, f"not quoted verbatim from {opts['quote']}, which holds:\n{actual}"
        elif block.lang == "text":
            assert self.last_python_output is not None, "a `text test` block must follow a `python test` block"
            mismatch = transcript_mismatch(block.text.splitlines(), self.last_python_output)
            assert mismatch is None, f"python block: {mismatch}"
        elif block.lang == "console":
            for command, status, expected in console_steps(block.text):
                self._command(command, status, expected)
        elif block.lang == "python":
            proc = subprocess.run([sys.executable, "-"], input=block.text, cwd=self.cwd, env=self.env,
                                  capture_output=True, text=True, timeout=TIMEOUT)
            assert proc.returncode == 0, f"python block exited {proc.returncode}:\n{proc.stdout}{proc.stderr}"
            self.last_python_output = proc.stdout
            return
        else:
            raise AssertionError(f"a `{block.lang} test` block needs file=, append= or quote=")
        self.last_python_output = None

    def _command(self, command: str, status: int, expected: list[str]) -> None:
        words = shlex.split(command)
        if words and words[0] == "cd":
            self.cwd = (self.cwd / words[1]).resolve()
            assert self.cwd.is_dir(), f"cd {words[1]}: no such folder"
            return
        # One pipe for stdout and stderr: the lines in the order a terminal shows them.
        proc = subprocess.run(["bash", "-c", command], cwd=self.cwd, env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT)
        output = proc.stdout
        assert proc.returncode == status, f"$ {command}\nexited {proc.returncode}, not {status}:\n{output}"
        mismatch = transcript_mismatch(expected, output)
        assert mismatch is None, f"$ {command}\n{mismatch}"


_vulkan: dict[str, bool] = {}


VULKAN_PROBES = {
    "vulkan": "from genspirv.runtime import Device\nDevice().close()\n",
    "vulkan-validation": "from genspirv.runtime import Device\nDevice(validation=True).close()\n",
    # Not Vulkan, but asked the same way: the `slang-glslang` extra is installed.
    "slang-glslang": "from genspirv.toolchain.slang.library import find_library\nfind_library()\n",
}


def have(tool: str, env: dict[str, str]) -> bool:
    if tool not in VULKAN_PROBES:
        return shutil.which(tool, path=env["PATH"]) is not None
    if tool not in _vulkan:
        proc = subprocess.run([sys.executable, "-c", VULKAN_PROBES[tool]], env=env,
                              capture_output=True, timeout=120)
        _vulkan[tool] = proc.returncode == 0
    return _vulkan[tool]


BLOCKS = parse_blocks(GUIDE.read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory) -> Walkthrough:
    scratch = tmp_path_factory.mktemp("guide")
    bin_dir = scratch / ".bin"
    bin_dir.mkdir()
    shim = bin_dir / "genspirv"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m genspirv "$@"\n')
    shim.chmod(0o755)
    env = dict(os.environ)
    # The interpreter running the tests first on PATH, as for a user whose environment with
    # genspirv is active: `python3` in the guide's commands (and the one the CMake package finds) is it.
    env["PATH"] = os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent), env.get("PATH", "")])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env.setdefault("XDG_RUNTIME_DIR", "/tmp")
    env["PRE_COMMIT_HOME"] = str(scratch / ".pre-commit")
    work = scratch / "work"
    work.mkdir()
    w = Walkthrough(cwd=work, env=env)
    for block in BLOCKS:
        w.results[block.id] = w.run(block)
    return w


def test_the_guide_has_runnable_examples():
    langs = {b.lang for b in BLOCKS}
    assert {"console", "python", "c"} <= langs, langs
    assert len(BLOCKS) >= 10


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_guide_block(walkthrough, block):
    outcome = walkthrough.results[block.id]
    if outcome.startswith("skip: "):
        pytest.skip(outcome[6:])
    assert outcome == "", outcome


# -- the runner itself: it must be able to fail --------------------------------


def test_a_transcript_must_show_every_line_printed():
    out = "a 1\nb 2\nc 3\n"
    assert transcript_mismatch(["a 1", "b 2", "c 3"], out) is None
    assert transcript_mismatch(["a ...", "...", "... 3"], out) is None       # a line of its own: any lines
    assert transcript_mismatch(["a 1", "...", "b 2", "...", "c 3"], out) is None   # ... may stand for none
    assert transcript_mismatch(["...", "c 3"], out) is None
    assert "does not show: 'c 3'" in transcript_mismatch(["a 1", "b 2"], out)    # a line left out
    assert "'c 3' does not match: the command printed 'b 2' there" in transcript_mismatch(["a 1", "c 3"], out)
    assert "'d' does not match" in transcript_mismatch(["a 1", "d"], out)
    assert "'a 1' does not match" in transcript_mismatch(["a 1"], "")
    assert transcript_mismatch([], "") is None and transcript_mismatch([], "\n  \n") is None
    assert "does not show" in transcript_mismatch([], "x\n")


def test_console_steps_parse_exit_status():
    steps = console_steps("$ genspirv check   # exit 1: stale\nstale\n$ true\n")
    assert steps == [("genspirv check", 1, ["stale"]), ("true", 0, [])]


def test_a_wrong_expectation_fails_the_walkthrough(tmp_path):
    w = Walkthrough(cwd=tmp_path, env=dict(os.environ))
    bad = parse_blocks("```console test\n$ echo hello\ngoodbye\n```\n")
    assert "transcript line 'goodbye' does not match" in w.run(bad[0])
    later = parse_blocks("```console test\n$ true\n```\n")[0]
    assert w.run(later).startswith("not reached")


def test_a_transcript_sees_stderr_where_a_terminal_shows_it(tmp_path):
    w = Walkthrough(cwd=tmp_path, env=dict(os.environ))
    ok = parse_blocks("```console test\n$ echo a; echo b >&2; echo c\na\nb\nc\n```\n")[0]
    assert w.run(ok) == ""
    swapped = parse_blocks("```console test\n$ echo a; echo b >&2; echo c\na\nc\nb\n```\n")[0]
    assert "does not match" in w.run(swapped)


def test_a_failing_python_block_fails(tmp_path):
    w = Walkthrough(cwd=tmp_path, env=dict(os.environ))
    block = parse_blocks("```python test\nassert 1 == 2\n```\n")[0]
    assert "python block exited 1" in w.run(block)


# -- pre-commit hooks the guide documents -------------------------------------


def test_pre_commit_hooks_are_valid_and_name_real_commands():
    clientlib = pytest.importorskip("pre_commit.clientlib")
    hooks = clientlib.load_manifest(str(REPO / ".pre-commit-hooks.yaml"))
    assert {h["id"] for h in hooks} == {"genspirv-check", "genspirv-build"}
    from genspirv.cli import make_parser
    for h in hooks:
        program, *args = shlex.split(h["entry"])
        assert program == "genspirv" and h["pass_filenames"] is False and h["language"] == "python"
        make_parser().parse_args(args)      # exits (SystemExit) on an unknown command or option
        assert hook_runs_for(h, [".pre-commit-config.yaml"]), h["id"]


def hook_runs_for(hook: dict, staged: list[str]) -> bool:
    """Whether pre-commit runs ``hook`` for a commit of ``staged`` (its always_run, files, exclude)."""
    if hook.get("always_run"):
        return True
    files, exclude = re.compile(hook.get("files", "")), re.compile(hook.get("exclude", "^$"))
    return any(files.search(p) and not exclude.search(p) for p in staged)


@pytest.mark.parametrize("staged", [
    ["templates/kernels.hpp.j2"],          # a project template
    ["shaders/variants.py"],               # a generator
    ["src/ggml_shaders.hpp"],              # generated code outside manifests/
    ["kernels/matvec.comp"],               # glsl_dir = "kernels"
    [".pre-commit-config.yaml"],           # a new `rev`: another compiler, the same sources
])
def test_pre_commit_hooks_run_whatever_the_commit_holds(staged):
    """No fixed `files` filter knows a project's layout: the hooks run on every commit."""
    clientlib = pytest.importorskip("pre_commit.clientlib")
    for h in clientlib.load_manifest(str(REPO / ".pre-commit-hooks.yaml")):
        assert hook_runs_for(h, staged), (h["id"], staged)


def test_a_files_filter_would_miss_a_template():
    """Negative control: the default-layout filter the hooks once had misses a template."""
    old = {"files": r"^(pyproject\.toml|glsl/.*|spirv/.*|manifests/.*)$"}
    assert hook_runs_for(old, ["glsl/add.comp"]) and not hook_runs_for(old, ["templates/kernels.hpp.j2"])


def test_readme_links_the_guide():
    readme = REPO / "README.md"
    if not readme.exists():
        pytest.skip("README.md not written yet")
    assert "docs/GUIDE.md" in readme.read_text(encoding="utf-8")


# -- docs/BENCHMARKS.md: every figure's command parses and its raw JSON is there ---------

BENCHMARKS = REPO / "docs" / "BENCHMARKS.md"
FIGURE = re.compile(r"^Command: `([^`]+)`\s*\nRaw: \[`(docs/bench/[^`]+\.json)`\]", re.M)


def benchmark_parser():
    """``python -m benchmarks``' own parser (the suites' options and ``--root``)."""
    import argparse

    from benchmarks import add_arguments
    parser = argparse.ArgumentParser(prog="python -m benchmarks")
    parser.add_argument("--root")
    add_arguments(parser)
    return parser


# Figures measured before the benchmarks left the package name the suites as the command
# `python -m genspirv bench SUITE` (their raw JSON says so); the same suites run today as
# `python -m benchmarks SUITE` (docs/BENCHMARKS.md says so at its top).
SPELLINGS = (["python", "-m", "benchmarks"], ["python", "-m", "genspirv", "bench"])


def test_benchmark_figures_name_a_command_that_parses_and_their_raw_json():
    figures = FIGURE.findall(BENCHMARKS.read_text(encoding="utf-8"))
    assert figures, "docs/BENCHMARKS.md cites no figure in the form 'Command: `...`' / 'Raw: [`docs/bench/...`]'"
    for command, raw in figures:
        argv = shlex.split(command)
        spelling = next((s for s in SPELLINGS if argv[:len(s)] == s), None)
        assert spelling is not None, command
        benchmark_parser().parse_args(argv[len(spelling):])     # exits (SystemExit) on anything it cannot parse
        doc = __import__("json").loads((REPO / raw).read_text(encoding="utf-8"))
        assert doc["meta"]["command"] == command, (raw, doc["meta"]["command"])
        assert doc["complete"] is True, raw


def test_a_command_joined_with_spaces_would_not_pass():
    """Negative control for the check above: argv joined with spaces loses the quoting."""
    argv = ["demo", "--demo-args", "--layers 8 --dim 1024"]
    benchmark_parser().parse_args(shlex.split(shlex.join(argv)))
    with pytest.raises(SystemExit):
        benchmark_parser().parse_args(shlex.split(" ".join(argv)))


def test_readme_where_things_are_names_existing_folders():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text.split("## Where things are", 1)[1].split("\n## ", 1)[0]
    folders = re.findall(r"^\| ((?:`[^`]+`(?:, )?)+) \|", section, re.M)
    names = [n for cell in folders for n in re.findall(r"`([^`]+)`", cell)]
    assert "genspirv/runtime/" in names and "tools/" in names
    missing = [n for n in names if not (REPO / n).is_dir()]
    assert not missing, f"README 'Where things are' names folders that do not exist: {missing}"
    assert (REPO / "docs" / "ARCHITECTURE.md").is_file() and "docs/ARCHITECTURE.md" in section


# -- the README's set-up is what CI runs ----------------------------------------


def readme_setup_commands() -> list[str]:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Set-up"):]
    block = re.search(r"^```sh\n(.*?)^```", section, re.M | re.S).group(1)
    return [line for line in block.splitlines() if line.strip() and not line.startswith("#")]


def test_ci_runs_the_readme_setup_commands_verbatim_in_a_stock_environment():
    commands = readme_setup_commands()
    assert len(commands) == 2, commands
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    stock = re.search(r"^stock\(\) \{\n(.*?)^\}", ci, re.M | re.S).group(1)
    assert "env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin " in stock, stock
    for command in commands:
        # The test command may take stdin from /dev/null in CI (no terminal there).
        assert re.search(rf"^stock '{re.escape(command)}( </dev/null)?'", ci, re.M), command
    # Neither command may rely on a `python` command or an activated environment.
    for command in commands:
        assert not re.search(r"(^|&& )python3? ", command), command


def test_the_readme_check_would_catch_a_changed_command(tmp_path):
    """Negative control: a README command CI does not run is found."""
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    changed = "bash ci/setup.sh && python -m genspirv build"
    assert not re.search(rf"^stock '{re.escape(changed)}( </dev/null)?'", ci, re.M)


# -- docs/RULES.md: the code cites the repository's own rules, by section ----------

RULES = REPO / "docs" / "RULES.md"
CITATION = re.compile(r"docs/RULES\.md(?:#([a-z0-9-]+))?")


def heading_anchors(markdown: str) -> set[str]:
    """GitHub's anchors for a page's headings: lower case, punctuation dropped, spaces to hyphens."""
    headings = re.findall(r"^#{1,6} (.+?)\s*$", markdown, re.M)
    return {re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-") for h in headings}


def rules_citations() -> list[tuple[str, str]]:
    """(file, anchor) for every citation of a RULES.md section in the package, tests, tools and docs."""
    found = []
    for folder in ("genspirv", "tests", "tools", "docs"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.suffix in (".py", ".md", ".h", ".cmake", ".j2") and path.is_file():
                text = path.read_text(encoding="utf-8")
                found += [(str(path.relative_to(REPO)), m.group(1)) for m in CITATION.finditer(text) if m.group(1)]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    return found + [("README.md", m.group(1)) for m in CITATION.finditer(readme) if m.group(1)]


def test_every_citation_of_the_rules_names_a_section_that_exists():
    anchors = heading_anchors(RULES.read_text(encoding="utf-8"))
    citations = rules_citations()
    assert len({f for f, _ in citations}) >= 5, citations      # the package, tests and tools cite it
    broken = [(f, a) for f, a in citations if a not in anchors]
    assert not broken, f"citations of docs/RULES.md sections that do not exist: {broken} (have {sorted(anchors)})"


def test_a_citation_of_a_missing_section_would_be_caught():
    """Negative control for the check above."""
    anchors = heading_anchors("# Rules\n\n## Access and hazard rules\n")
    assert "access-and-hazard-rules" in anchors and "reflection-rules" not in anchors


def test_no_code_cites_a_document_outside_the_repository():
    pattern = re.compile(r"\bDESIGN\.md\b")
    hits = [str(p.relative_to(REPO)) for folder in ("genspirv", "tests", "tools", "docs", "ci")
            for p in (REPO / folder).rglob("*") if p.is_file() and p.suffix in (".py", ".md", ".sh", ".h")
            and p != Path(__file__) and pattern.search(p.read_text(encoding="utf-8", errors="replace"))]
    assert not hits, f"these cite DESIGN.md, which is not part of this repository; cite docs/RULES.md: {hits}"


def test_readme_and_architecture_link_the_rules():
    for doc in ("README.md", "docs/ARCHITECTURE.md"):
        assert "RULES.md" in (REPO / doc).read_text(encoding="utf-8"), doc


# -- the README's configuration block: "these are the defaults" ---------------------


def readme_config_block() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Configuration"):]
    return re.search(r"^```toml\n(.*?)^```", section, re.M | re.S).group(1)


def test_readme_config_block_loads_and_shows_the_defaults(tmp_path):
    from genspirv.project.config import load_config
    (tmp_path / "glsl").mkdir()
    (tmp_path / "glsl" / "add.comp").write_text("#version 450\nlayout(local_size_x = 1) in;\nvoid main() {}\n")
    (tmp_path / "pyproject.toml").write_text(readme_config_block())
    shown = load_config(tmp_path)
    assert [v.name for v in shown.variants] == ["add_f16", "add_f32"]
    (tmp_path / "pyproject.toml").write_text('[tool.genspirv.shaders."add.comp"]\n'
                                             'matrix = { TYPE = { f32 = "float", f16 = "float16_t" } }\n')
    defaults = load_config(tmp_path)
    assert shown == defaults, "the README's configuration block is not the defaults"


# -- the runtime's counters: every one is in the guide's list ------------------------------------


def guide_counters() -> set[str]:
    text = GUIDE.read_text(encoding="utf-8")
    paragraph = text.split("**Counters** (`dev.stats`", 1)[1].split("\n\n", 1)[0]
    return set(re.findall(r"`([a-z_]+)`", paragraph))


def runtime_counters() -> tuple[str, ...]:
    """``COUNTERS`` of genspirv/runtime/device.py, read without importing Vulkan."""
    import ast
    tree = ast.parse((REPO / "genspirv" / "runtime" / "device.py").read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.Assign)
                and any(getattr(t, "id", None) == "COUNTERS" for t in n.targets))
    return ast.literal_eval(node.value)


def test_the_guide_lists_every_runtime_counter():
    missing = [c for c in runtime_counters() if c not in guide_counters()]
    assert not missing, f"docs/GUIDE.md's counter list leaves out {missing}"
    # Control: a counter the guide does not name would be reported.
    assert "not_a_counter" not in guide_counters() and len(runtime_counters()) >= 10
