import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    """A fresh, fixed-seed generator per test, so tests cannot affect each other."""
    return np.random.default_rng(20240601)
