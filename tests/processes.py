"""Process helpers for the kill tests (Linux /proc): who descends from whom, and who has exited."""

from __future__ import annotations

from pathlib import Path


def _stat(pid: int) -> list[str] | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2:].split()  # state, ppid, ...


def descendants(pid: int) -> list[int]:
    """Live descendants of ``pid``."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            st = _stat(int(entry.name))
            if st and st[0] != "Z":
                children.setdefault(int(st[1]), []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def gone(pid: int) -> bool:
    """The process has exited (a zombie waiting for its reaper counts as exited)."""
    st = _stat(pid)
    return st is None or st[0] in ("Z", "X")


def interrupt_like_a_terminal(args: list[str], workers: int, *, early: bool = False, every: float = 6.0,
                              timeout: float = 120) -> tuple[int, str, list[int]]:
    """Run ``python -m analysis ARGS`` and press Ctrl-C as in a terminal: SIGINT to its whole process group.

    The first SIGINT goes as soon as a child process appears when ``early`` (a
    local cluster is then still starting), else once ``workers`` descendants are
    alive and a second has passed; then one every ``every`` seconds until the
    run exits. Returns (exit status, stderr, the descendants seen).
    """
    import os
    import signal
    import subprocess
    import sys
    import time

    def as_in_a_terminal() -> None:
        # a shell's background job (`cmd &`, nohup, some CI runners) hands its children SIGINT ignored, and
        # Python then never raises KeyboardInterrupt; a terminal's foreground command has it at the default
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen([sys.executable, "-m", "analysis", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, start_new_session=True, preexec_fn=as_in_a_terminal)
    kids: list[int] = []
    err = ""
    try:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and len(kids) < (1 if early else workers) and proc.poll() is None:
            time.sleep(0.05)
            kids = descendants(proc.pid)
        if not early:
            time.sleep(1.0)
        while proc.poll() is None and time.monotonic() < deadline:
            kids = sorted(set(kids) | set(descendants(proc.pid)))
            os.killpg(proc.pid, signal.SIGINT)
            try:
                _, err = proc.communicate(timeout=every)
            except subprocess.TimeoutExpired:
                continue
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err, kids
