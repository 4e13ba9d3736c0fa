import os

import numpy as np
import pytest


@pytest.fixture(autouse=True, scope="session")
def _store_key(tmp_path_factory):
    """Results stores sign their rows with a key of the test session (never the user's own key file);
    set in the environment, so the commands the tests start in subprocesses use it too."""
    old = os.environ.get("MELEELAB_STORE_KEY")
    os.environ["MELEELAB_STORE_KEY"] = str(tmp_path_factory.mktemp("store-key") / "store.key")
    yield
    if old is None:
        os.environ.pop("MELEELAB_STORE_KEY", None)
    else:
        os.environ["MELEELAB_STORE_KEY"] = old


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh, fixed-seed generator per test, so tests cannot affect each other."""
    return np.random.default_rng(20240601)


@pytest.fixture
def monte_carlo_cells(monkeypatch):
    """Every cell is Monte Carlo, as with ``--method mc``, for tests about sampled cells (results stores,
    resumes, the stopping rule, workers and clusters): under ``auto`` one-a-side cells of mecha, duel or pools
    would be exact, with no sampling and no tasks (tested in tests/runs/test_exact_cells.py).
    A module takes it with ``pytestmark = pytest.mark.usefixtures("monte_carlo_cells")``."""
    import sim.exact

    real = sim.exact.choose_method
    monkeypatch.setattr(sim.exact, "choose_method", lambda *a, **kw: real(*a, **{**kw, "method": "mc"}))


@pytest.fixture
def plain_figures():
    """A report's plots built but not rasterised (:func:`tests.plain_figures.blank_figures`), for one test."""
    from tests.plain_figures import blank_figures

    with blank_figures():
        yield
