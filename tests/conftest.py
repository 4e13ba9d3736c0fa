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
