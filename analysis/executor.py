"""``--scheduler``: connect to a Dask cluster, or start a local one.

``ADDRESS`` (``tcp://host:8786``) connects to a scheduler started with the
standard ``dask scheduler`` / ``dask worker`` commands; ``local:N`` starts a
:class:`distributed.LocalCluster` of N single-threaded worker processes for the
length of the command. Dask is an optional extra (``pip install
"meleelab[cluster]"``) and is imported only here, only when asked for.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import re
from collections.abc import Iterator
from typing import Any

from sim.errors import InputError

__all__ = ["scheduler_client", "parse_scheduler", "dask_available", "check_workers", "CONNECT_TIMEOUT"]

#: Seconds to wait for a remote scheduler before giving up with one line.
CONNECT_TIMEOUT = 20


def dask_available() -> bool:
    """Whether ``dask.distributed`` can be imported (without importing it)."""
    return importlib.util.find_spec("distributed") is not None


def parse_scheduler(spec: str) -> tuple[str, Any]:
    """``("local", n_workers)`` or ``("address", address)``; bad text raises :class:`InputError`."""
    text = spec.strip()
    m = re.fullmatch(r"local:(\S*)", text)
    if m:
        try:
            n = int(m.group(1))
        except ValueError:
            n = 0
        if n < 1:
            raise InputError(f"--scheduler {spec!r}: expected local:N with N a positive number of workers")
        return "local", n
    if not text or any(c.isspace() for c in text):
        raise InputError(f"--scheduler {spec!r}: expected a scheduler address (tcp://host:8786) or local:N")
    return "address", text


@contextlib.contextmanager
def scheduler_client(spec: str | None, *, memory_limit: str | None = None) -> Iterator[Any]:
    """Yield a ``dask.distributed.Client`` for ``spec`` (or None for no spec), closed on exit.

    Parameters
    ----------
    spec : str or None
        ``ADDRESS`` or ``local:N`` (see the module docstring).
    memory_limit : str, optional
        Per-worker memory limit of a local cluster (default: Dask's, machine memory / N).
    """
    if spec is None:
        yield None
        return
    kind, value = parse_scheduler(spec)
    if not dask_available():
        raise InputError('--scheduler needs Dask, which is not installed: pip install "meleelab[cluster]"')
    try:
        from distributed import Client, LocalCluster
    except ImportError as e:  # installed but broken (a missing shared library, a partial upgrade...)
        why = f"{type(e).__name__}: {' '.join(str(e).split())[:160]}"
        raise InputError(f'--scheduler needs Dask, which fails to import ({why}): reinstall it with '
                         'pip install "meleelab[cluster]"') from None

    if kind == "local":
        # one single-threaded process per worker (the kernels hold the GIL); the dashboard on a free port,
        # so two runs at once do not fight over 8787 (its link: client.dashboard_link)
        kwargs: dict[str, Any] = dict(n_workers=value, threads_per_worker=1, processes=True,
                                      dashboard_address=":0", silence_logs=logging.ERROR)
        if memory_limit is not None:
            kwargs["memory_limit"] = memory_limit
        with LocalCluster(**kwargs) as cluster, Client(cluster) as client:
            yield client
        return
    try:
        client = Client(value, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError, ValueError) as e:
        raise InputError(f"--scheduler {value}: cannot connect ({' '.join(str(e).split())[:200]})") from None
    try:
        check_workers(client)
        yield client
    finally:
        client.close()


def simulator_identity() -> dict[str, str]:
    """What a worker's numbers depend on: NumPy's version and the digest of the simulator's source."""
    import numpy as np

    from .store import code_digest

    return {"numpy": np.__version__, "simulator": code_digest()[:16]}


def check_workers(client: Any) -> None:
    """Refuse a cluster whose workers would compute other numbers (another meleelab or NumPy)."""
    here = simulator_identity()
    try:
        there = client.run(simulator_identity)
    except Exception as e:  # noqa: BLE001 - e.g. meleelab not installed on the workers
        raise InputError(f"--scheduler: the workers cannot run meleelab ({type(e).__name__}: "
                         f"{' '.join(str(e).split())[:160]}); install the same meleelab on every worker") from None
    for worker, ident in there.items():
        if ident != here:
            raise InputError(f"--scheduler: worker {worker} runs another simulator ({ident}, here {here}); "
                             "install the same meleelab and NumPy on every worker")
