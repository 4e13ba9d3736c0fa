"""Output files: written atomically (temporary file, then rename) and deterministically."""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from sim.errors import OutputError

__all__ = ["atomic_write_text", "atomic_write_bytes", "check_output_dir", "OutputError", "to_json", "clean_json",
           "plain_values"]


def _why(e: OSError) -> str:
    return e.strerror or type(e).__name__


def check_output_dir(out_dir: str | Path) -> Path:
    """Make sure ``out_dir`` can be created and a file written beside it, before any work is done.

    Nothing is ever written into a folder that exists already (it may be the
    user's): the probe file goes where the run's staging folder will go, beside
    it, and the folder itself is only checked for write access. A folder created
    for the check is removed again, so a command that fails afterwards leaves
    nothing behind.

    Raises
    ------
    OutputError
        The path is a file or lies below one, a folder is not writable, the disk is full...
    """
    out = Path(out_dir)
    for parent in [out, *out.parents]:
        if parent.exists() and not parent.is_dir():
            where = "is a file" if parent == out else f"lies below the file {parent}"
            raise OutputError(f"{out}: cannot write the output folder there ({where})")
    created = [p for p in [out, *out.parents] if not p.exists()]  # deepest first
    try:
        if out.is_dir() and not os.access(out, os.W_OK | os.X_OK):
            raise PermissionError(13, "Permission denied")
        out.mkdir(parents=True, exist_ok=True)
        where = out if created and created[0] == out else Path(os.path.realpath(out)).parent
        fd, probe = tempfile.mkstemp(prefix=".meleelab-write-check.", dir=where)
        try:
            os.write(fd, b"x")
            os.fsync(fd)
        finally:
            os.close(fd)
            os.unlink(probe)
    except OSError as e:
        raise OutputError(f"{out}: cannot write the output folder ({_why(e)})") from None
    finally:
        # leave the disk as it was: a command that fails later must not leave an empty output folder behind
        # (the run creates the folder again when it stores its first cell or swaps its output in)
        for p in created:
            try:
                p.rmdir()
            except OSError:
                break
    return out


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one.

    Raises
    ------
    OutputError
        The file cannot be written (one line naming the path and the reason).
    """
    path = Path(path)
    try:
        return _atomic_write(path, data)
    except OSError as e:
        raise OutputError(f"{path}: cannot write ({_why(e)})") from None


def _atomic_write(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        # mkstemp creates 0600 files; published reports must be readable like any other file
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


def clean_json(x: Any) -> Any:
    """Replace NaN and infinities (not JSON) by ``None``, recursively."""
    if isinstance(x, float) and not math.isfinite(x):
        return None
    if isinstance(x, dict):
        return {k: clean_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean_json(v) for v in x]
    return x


def to_json(x: Any, indent: int | None = 2) -> str:
    """Strict JSON text (no NaN)."""
    return json.dumps(clean_json(x), indent=indent, allow_nan=False, default=_default)


def _default(o: Any) -> Any:
    import numpy as np

    if isinstance(o, np.integer):
        return int(o)
    if isinstance(o, np.floating):
        return float(o)
    if isinstance(o, np.ndarray):
        return o.tolist()
    if hasattr(o, "to_jsonable"):
        return o.to_jsonable()
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")


def plain_values(x: Any) -> Any:
    """JSON-friendly plain values (dataclasses, tuples, numpy scalars)."""
    import numpy as np  # here: the CLI's --help imports this module and no heavy library
    if isinstance(x, Mapping):
        return {str(k): plain_values(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain_values(v) for v in x]
    if isinstance(x, np.integer):
        return int(x)
    if isinstance(x, np.floating):
        return float(x)
    if hasattr(x, "to_jsonable"):
        return x.to_jsonable()
    if hasattr(x, "__dataclass_fields__"):
        import dataclasses

        return plain_values(dataclasses.asdict(x))
    return x
