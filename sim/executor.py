"""Where block tasks run: this process, local worker processes, or any ``submit`` executor.

An *executor* is anything with ``submit(fn, *args)`` returning a future that has
``result()``, ``add_done_callback(fn)`` and ``cancel()``: a
:class:`concurrent.futures.ProcessPoolExecutor`, or a ``dask.distributed.Client``
(which this module recognises by duck typing and never imports, so ``sim`` needs
no Dask). :class:`TaskQueue` collects results as tasks finish, whatever the
executor, and :func:`local_pool` starts worker processes that die with their
parent (a SIGKILL of the main process leaves no orphaned workers).
"""

from __future__ import annotations

import os
import queue
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from typing import Any

__all__ = ["TaskQueue", "local_pool", "executor_slots", "die_with_parent", "is_dask_client", "tune_malloc",
           "check_executor", "ClusterLostError"]

#: Seconds between looks at a Dask client's status while waiting for a task (see :meth:`TaskQueue.next`).
CLIENT_POLL = 1.0


class ClusterLostError(RuntimeError):
    """A Dask client that lost its scheduler for good: the tasks in flight will never finish."""

#: Linux prctl option: signal sent to this process when its parent dies.
_PR_SET_PDEATHSIG = 1

#: glibc variables that fix malloc's thresholds (and so switch off its dynamic mmap threshold).
_MALLOC_ENV = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_")
_malloc_tuned = False


def tune_malloc() -> None:
    """Keep block-sized arrays on the heap in a worker whose malloc thresholds were fixed.

    Dask workers start with ``MALLOC_TRIM_THRESHOLD_=65536``. Setting any such
    variable turns off glibc's dynamic mmap threshold, so every array above
    128 KiB (a block's arrays are 64-512 KiB) is mapped and unmapped afresh:
    measured here, that doubles the time per block. Raising the mmap and trim
    thresholds (``mallopt``) restores heap reuse; a worker then keeps at most
    64 MiB of freed memory. Does nothing elsewhere, or after the first call.
    """
    global _malloc_tuned
    if _malloc_tuned:
        return
    _malloc_tuned = True
    if not sys.platform.startswith("linux") or not any(k in os.environ for k in _MALLOC_ENV):
        return
    try:
        import ctypes

        libc = ctypes.CDLL(None)
        m_trim_threshold, m_mmap_threshold = -1, -3
        libc.mallopt(m_mmap_threshold, 32 << 20)
        libc.mallopt(m_trim_threshold, 64 << 20)
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        pass


def die_with_parent(parent_pid: int) -> None:
    """Make this (worker) process exit when ``parent_pid`` dies, even by SIGKILL.

    On Linux the kernel delivers SIGKILL on the parent's death
    (``prctl(PR_SET_PDEATHSIG)``); elsewhere a daemon thread checks every
    second that ``parent_pid`` is alive. Called as the worker initializer of
    :func:`local_pool`.
    """
    if sys.platform.startswith("linux"):
        try:
            import ctypes
            import signal

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        except (OSError, AttributeError):  # pragma: no cover - no libc prctl: fall back to polling
            _watch_parent(parent_pid)
    else:  # pragma: no cover - exercised on macOS and Windows only
        _watch_parent(parent_pid)
    # the parent may have died before prctl took effect (with a fork server the direct parent is that server,
    # which dies with the main process: so ask whether the main process is alive, not who the parent is)
    if not _alive(parent_pid):
        os._exit(1)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # pragma: no cover - exists, owned by someone else
        return True
    return True


def _watch_parent(parent_pid: int) -> None:
    def watch() -> None:
        import time

        while _alive(parent_pid):
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, name="meleelab-parent-watch", daemon=True).start()


def local_pool(workers: int) -> ProcessPoolExecutor:
    """``workers`` local processes that exit when this process dies."""
    return ProcessPoolExecutor(max_workers=workers, initializer=die_with_parent, initargs=(os.getpid(),))


def is_dask_client(executor: Any) -> bool:
    """True for a ``dask.distributed.Client`` (checked without importing Dask)."""
    return type(executor).__module__.split(".")[0] == "distributed" and hasattr(executor, "scheduler_info")


def check_executor(executor: Any, name: str = "executor") -> Any:
    """``executor`` (None allowed) if it has a callable ``submit``; else an InputError naming ``name``.

    Checked before any work, so a wrong object fails with the library's error, not an
    ``AttributeError`` from deep in the runner.
    """
    if executor is not None and not callable(getattr(executor, "submit", None)):
        from .errors import InputError

        text = repr(executor)
        text = text if len(text) <= 60 else text[:57] + "..."
        raise InputError(f"{name}: got {text}, expected a dask.distributed.Client or an object with "
                         "submit(fn, *args) returning a future (or None: local processes)")
    return executor


def executor_slots(executor: Any) -> int:
    """How many tasks ``executor`` runs at once (worker threads of a Dask cluster, pool size...)."""
    n = 0
    if is_dask_client(executor):
        try:
            n = sum(executor.nthreads().values())
        except Exception:  # noqa: BLE001 - an unreachable scheduler shows up when tasks are submitted
            n = 0
    else:
        n = getattr(executor, "_max_workers", 0) or 0
    return max(1, int(n) or (os.cpu_count() or 1))


class TaskQueue:
    """Submit tasks to an executor and take their results in the order they finish.

    Parameters
    ----------
    executor : object
        Has ``submit(fn, *args)``; see the module docstring.

    Notes
    -----
    Completion is signalled through ``future.add_done_callback`` (supported by
    both concurrent and Dask futures), so no executor-specific ``as_completed``
    is needed. Futures are held until their result is taken: a Dask future that
    is dropped is cancelled.
    """

    def __init__(self, executor: Any) -> None:
        self.executor = executor
        self._dask = is_dask_client(executor)
        self._done: queue.Queue[Any] = queue.Queue()
        self._tags: dict[Any, Any] = {}

    def submit(self, tag: Any, fn: Callable[..., Any], *args: Any) -> Any:
        """Run ``fn(*args)``; :meth:`next` returns ``(tag, result)`` when it is done."""
        if self._dask:
            # pure=False: no hashing of the arguments, and no de-duplication of equal tasks
            fut = self.executor.submit(fn, *args, pure=False)
        else:
            fut = self.executor.submit(fn, *args)
        self._tags[fut] = tag
        fut.add_done_callback(self._done.put)
        return fut

    def __len__(self) -> int:
        """Tasks submitted whose results have not been taken."""
        return len(self._tags)

    def next(self) -> tuple[Any, Any]:
        """Wait for the next finished task; return ``(tag, result)`` or raise its exception.

        Cancelled tasks are skipped. With a Dask client, its status is looked at every
        :data:`CLIENT_POLL` seconds while waiting: a client that closed after losing its
        scheduler does not always cancel the tasks submitted while it was reconnecting, and
        waiting for them would never end (:class:`ClusterLostError` instead).
        """
        while self._tags:
            try:
                fut = self._done.get(timeout=CLIENT_POLL if self._dask else None)
            except queue.Empty:
                status = str(getattr(self.executor, "status", "running"))
                if status in ("closing", "closed", "failed"):
                    raise ClusterLostError(f"the Dask client is {status}: it lost the scheduler and could not "
                                           "reconnect") from None
                continue
            if fut not in self._tags:  # cancelled by us: its result is not wanted
                continue
            return self._tags.pop(fut), fut.result()
        raise LookupError("no task in flight")

    def cancel(self, fut: Any) -> None:
        """Cancel one task (it may still run; its result is then ignored)."""
        if fut in self._tags:
            del self._tags[fut]
            try:
                fut.cancel()
            except Exception:  # noqa: BLE001 - a Dask client already closed (its scheduler gone): nothing to cancel
                pass

    def cancel_all(self) -> None:
        for fut in list(self._tags):
            self.cancel(fut)
