"""Docs that run: every ```bash and ```python example in README.md and docs/ is executed.

Each fenced block is one test, run in a fresh temporary folder (the current
directory while it runs). Two markers, documented in the README ("Docs that run"):

* ``<!-- docs-test: skip (why) -->`` on the line before a fence skips the block
  (installs, JupyterLab, the full ``report --all``): the reason is the skip message;
* ``<!-- docs-test: slow (why) -->`` runs the block only with ``pytest -m slow``
  (``.ci/run`` does): examples that fight for tens of seconds;
* a fence whose info string has ``file=NAME`` (```` ```toml file=my_units.toml ````)
  also writes its text to ``NAME`` in the folder of every later block of the
  same document, so examples can use the files the docs show.

A bash line that is a plain ``meleelab ...`` command (no pipes, redirections,
``;`` or variables) runs in-process through :func:`analysis.cli.main`, which is
what the ``meleelab`` script calls: the same parsing and output, without a new
interpreter per line. Anything else runs in ``bash``. Every command must exit 0;
every Python block must run without an exception.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

import sim

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "rules").glob("*.md"))]
FENCE = re.compile(r"^(?P<indent>[ ]*)```(?P<info>[^`\n]*)\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.S | re.M)
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s*(?P<why>.*?)\s*-->\s*$")
SLOW = re.compile(r"<!--\s*docs-test:\s*slow\s*(?P<why>.*?)\s*-->\s*$")
SHELL_ONLY = set(";&|<>()")


@dataclass(frozen=True)
class Block:
    """One fenced block of a document."""

    doc: str
    line: int
    lang: str
    file: str | None
    body: str
    skip: str | None
    slow: str | None = None

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def parse(path: Path) -> list[Block]:
    """The fenced blocks of a Markdown file, with their markers."""
    text = path.read_text(encoding="utf-8")
    out = []
    for m in FENCE.finditer(text):
        info = m.group("info").split()
        lang = info[0] if info else ""
        file = next((w.split("=", 1)[1] for w in info[1:] if w.startswith("file=")), None)
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        skip = SKIP.search(before)
        slow = SLOW.search(before)
        body = textwrap.dedent(m.group("body"))
        out.append(Block(str(path.relative_to(ROOT)), text[: m.start()].count("\n") + 1, lang, file, body,
                         (skip.group("why") or "marked skip") if skip else None,
                         (slow.group("why") or "marked slow") if slow else None))
    return out


BLOCKS = {str(p.relative_to(ROOT)): parse(p) for p in DOCS}
EXAMPLES = [b for blocks in BLOCKS.values() for b in blocks if b.lang in ("bash", "sh", "shell", "python")]


def _lines(body: str) -> list[str]:
    """Shell lines, backslash continuations joined, blank and comment-only lines dropped."""
    joined = body.replace("\\\n", " ")
    return [ln for ln in joined.splitlines() if ln.strip() and not ln.strip().startswith("#")]


def _tokens(line: str) -> list[str] | None:
    """The words of a plain command, or None when the line needs a real shell."""
    if "$" in line or "`" in line:
        return None
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words = list(lexer)
    if any(w and set(w) <= SHELL_ONLY for w in words):
        return None
    return words


def _run_shell_line(line: str) -> None:
    words = _tokens(line)
    if words and words[0] == "meleelab":
        from analysis.cli import main

        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(words[1:])
        assert rc == 0, f"`{line}` exited {rc}: {err.getvalue().strip() or out.getvalue()[-2000:]}"
        return
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", line], capture_output=True, text=True, env=env,
                          timeout=600)
    assert done.returncode == 0, f"`{line}` exited {done.returncode}: {done.stderr.strip()[-2000:]}"


@pytest.mark.parametrize("block", [pytest.param(b, id=b.id, marks=[pytest.mark.slow] if b.slow else [])
                                   for b in EXAMPLES])
def test_example_runs(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if block.skip:
        pytest.skip(f"docs-test: skip {block.skip}")
    for b in BLOCKS[block.doc]:
        if b.file and b.line < block.line:
            (tmp_path / b.file).write_text(b.body, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MPLBACKEND", "Agg")
    if block.lang == "python":
        code = compile(block.body, block.id, "exec")
        with contextlib.redirect_stdout(io.StringIO()):
            exec(code, {"__name__": "__docs_example__"})  # noqa: S102 - the docs' own examples
        return
    for line in _lines(block.body):
        _run_shell_line(line)


def test_there_are_examples_and_skips_say_why() -> None:
    assert len(EXAMPLES) >= 10
    for b in EXAMPLES:
        assert b.skip is None or b.skip.startswith("("), f"{b.id}: write the reason as <!-- docs-test: skip (why) -->"
        assert b.slow is None or b.slow.startswith("("), f"{b.id}: write the reason as <!-- docs-test: slow (why) -->"


def test_guide_install_commands_are_the_readme_quick_start() -> None:
    """The guide's "two commands" are the README's quick start, word for word."""
    readme = BLOCKS["README.md"]
    guide = BLOCKS[str(Path("docs") / "guide.md")]
    quick = next(b for b in readme if b.lang == "bash")
    install = next(b for b in guide if b.lang == "bash")
    assert quick.body == install.body
    assert "report --all" in quick.body and "pytest" in quick.body


ROSTERS = [b for bs in BLOCKS.values() for b in bs if b.lang == "toml" and "ruleset =" in b.body and not b.skip]


@pytest.mark.parametrize("block", ROSTERS, ids=[b.id for b in ROSTERS])
def test_roster_examples_load(block: Block, tmp_path: Path) -> None:
    """A TOML example that is a whole roster (it names its ruleset) loads without error."""
    path = tmp_path / (block.file or "roster.toml")
    path.write_text(block.body, encoding="utf-8")
    roster = sim.load_roster(path)
    assert roster.units


def test_shell_lines_are_split_like_bash() -> None:
    assert _tokens('meleelab fight mecha Kroete "Sand Stalker" --set a=1  # note') == [
        "meleelab", "fight", "mecha", "Kroete", "Sand Stalker", "--set", "a=1"]
    assert _tokens('meleelab fight warband A B --set "attacker.weapons=axe;axe"')[-1] == "attacker.weapons=axe;axe"
    assert _tokens("meleelab units mecha; echo x") is None
    assert _tokens("meleelab units mecha > out.txt") is None
    assert _tokens("echo $HOME") is None
