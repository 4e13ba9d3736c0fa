"""``--scheduler``: connect to a Dask cluster, or start a local one.

``ADDRESS`` (``tcp://host:8786``) connects to a scheduler started with the
standard ``dask scheduler`` / ``dask worker`` commands; ``local:N`` starts a
:class:`distributed.LocalCluster` of N single-threaded worker processes for the
length of the command. Dask is an optional extra (``pip install
"meleelab[cluster]"``) and is imported only here, only when asked for.
"""

from __future__ import annotations

import contextlib
import gc
import importlib.util
import logging
import re
from collections.abc import Iterator
from typing import Any

from sim.errors import InputError

__all__ = ["scheduler_client", "parse_scheduler", "dask_available", "check_workers", "dask_setup", "CONNECT_TIMEOUT",
           "local_workers", "cluster_failure"]

#: Seconds to wait for a remote scheduler before giving up with one line.
CONNECT_TIMEOUT = 20


def dask_available() -> bool:
    """Whether ``dask.distributed`` can be imported (without importing it)."""
    return importlib.util.find_spec("distributed") is not None


def local_workers(requested: int) -> int:
    """The worker processes ``local:N`` starts: ``N``, at most the machine's cores (as ``--workers``)."""
    from sim.limits import cpu_count

    return min(int(requested), cpu_count())


def cluster_failure(error: BaseException) -> str | None:
    """One line when ``error`` is the Dask cluster failing during a run, else None.

    A scheduler that goes away (``FutureCancelledError ... scheduler-connection-lost``),
    workers killed again and again (``KilledWorker``), a connection closed
    (``CommClosedError``): Dask's own exceptions, raised from its modules, and a client
    that closed for good while tasks were in flight (:class:`sim.executor.ClusterLostError`).
    """
    from sim.executor import ClusterLostError

    module = type(error).__module__ or ""
    if module.split(".")[0] not in ("distributed", "dask") and not isinstance(error, ClusterLostError):
        return None
    why = " ".join(str(error).split())
    why = why if len(why) <= 200 else why[:197] + "..."
    return (f"--scheduler: the Dask cluster failed during the run ({type(error).__name__}: {why}); check the "
            "scheduler and its workers, then run the command again")


@contextlib.contextmanager
def _dask_logs_silenced() -> Iterator[None]:
    """Dask's client logs below CRITICAL off for the block: a scheduler that goes away makes it log a
    traceback per reconnection attempt, while the command reports the failure in one line."""
    names = ["distributed"] + [n for n in logging.root.manager.loggerDict if n.startswith("distributed.")]
    saved = {n: logging.getLogger(n).level for n in names}
    for n in names:
        logging.getLogger(n).setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        for n, level in saved.items():
            logging.getLogger(n).setLevel(level)


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
        # preload: the workers leave Ctrl-C to this process (see dask_setup); their logs below CRITICAL are
        # silenced, as a stopping cluster logs lost heartbeats (a failed task still fails the command)
        kwargs: dict[str, Any] = dict(n_workers=local_workers(value), threads_per_worker=1, processes=True,
                                      dashboard_address=":0", silence_logs=logging.CRITICAL, preload=[__name__])
        if memory_limit is not None:
            kwargs["memory_limit"] = memory_limit
        with contextlib.ExitStack() as stack:
            with _sigint_ignored():  # a half-started cluster cannot be closed (see _sigint_ignored)
                cluster = stack.enter_context(LocalCluster(**kwargs))
                client = stack.enter_context(Client(cluster))
            yield client
        return
    with _dask_logs_silenced():
        failure = None
        try:
            client = Client(value, timeout=CONNECT_TIMEOUT)
        except Exception as e:  # noqa: BLE001 - OSError, TimeoutError; TypeError for ucx:// without UCX or
            # tls:// without certificates; whatever Dask raises for an address it cannot use: all one line
            why = " ".join(str(e).split())[:200]
            failure = f"--scheduler {value}: cannot connect ({type(e).__name__}: {why})"
        if failure is not None:
            # the half-built Client is garbage now (the exception held it): close it here, not whenever the
            # collector runs next, which can be inside another Client's start, where its close deadlocks on
            # Dask's loop lock (seen in the suite: a later Client() never returned)
            gc.collect()
            raise InputError(failure)
        try:
            check_workers(client)
            yield client
        finally:
            try:
                client.close()
            except Exception:  # noqa: BLE001 - a scheduler already gone: nothing left to close
                pass


@contextlib.contextmanager
def _sigint_ignored() -> Iterator[None]:
    """Ignore SIGINT (Ctrl-C) for the block: while a ``LocalCluster`` starts.

    Interrupted while it starts, a ``LocalCluster`` is left half-built (Dask's
    exit hook then fails on it with a traceback) and each worker process that
    is still importing prints a ``KeyboardInterrupt`` traceback. An ignored
    signal is inherited by the processes started meanwhile (Python then leaves
    SIGINT ignored in them), and a Ctrl-C in those few seconds is dropped: the
    next one, once the cluster is up, stops the command in one line. (Holding
    it pending instead is not possible: NumPy's BLAS threads would take it.)
    Main thread only; elsewhere a no-op.
    """
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, handler)


def dask_setup(worker: Any) -> None:
    """Dask preload hook of the ``local:N`` workers: ignore SIGINT, so Ctrl-C is handled by the command alone.

    A Ctrl-C in a terminal reaches every process of the foreground group. The
    command stops its cluster and exits in one line (status 130); a worker that
    took the signal too would print its own ``KeyboardInterrupt`` traceback as it
    died. Runs in each worker process, in its main thread, as it starts.
    """
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.SIG_IGN)


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
        why = f"{type(e).__name__}: {' '.join(str(e).split())[:160]}"
        if type(e).__module__.startswith("distributed.comm") or isinstance(e, OSError):  # the connection, not them
            raise InputError(f"--scheduler: the cluster went away while its workers were checked ({why})") from None
        raise InputError(f"--scheduler: the workers cannot run meleelab ({why}); install the same meleelab on "
                         "every worker") from None
    for worker, ident in there.items():
        if ident != here:
            raise InputError(f"--scheduler: worker {worker} runs another simulator ({ident}, here {here}); "
                             "install the same meleelab and NumPy on every worker")
