"""Shared fixtures. The tests run against the *installed* package (README: pip install ".[test]");
``--import-mode=importlib`` keeps the repository root off ``sys.path``."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import settings

from ssl_opt.builders import graph_laplacian_from_data, rbf_kernel
from ssl_opt.datasets.synthetic import gaussian_blobs, two_moons
from ssl_opt.problems import LapRLS, LapSVM
from ssl_opt.selection import model_store

# CI replays the same examples every run; locally hypothesis explores new ones.
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")


def make_problem(kind="moons", n=60, n_labeled=6, loss="squared_hinge", normalized=False,
                 bias=True, gamma_A=1e-2, gamma_I=1.0, seed=0, power=1):
    if kind == "moons":
        data = two_moons(n=n, n_labeled=n_labeled, noise=0.12, seed=seed)
        sigma = 0.4
    else:
        data = gaussian_blobs(n=n, n_labeled=n_labeled, d=3, separation=2.5, seed=seed)
        sigma = 1.5
    K = rbf_kernel(data.X, sigma=sigma)
    L = graph_laplacian_from_data(data.X, n_neighbors=6, normalized=normalized, power=power)
    if loss == "squared":
        return LapRLS(K, L, data.y, gamma_A, gamma_I, bias=bias)
    return LapSVM(K, L, data.y, gamma_A, gamma_I, loss=loss, bias=bias)


@pytest.fixture
def problem_factory():
    return make_problem


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A private cost-model cache (``model_store``) for the test, cleared before and after."""
    monkeypatch.setenv(model_store.CACHE_ENV, str(tmp_path / "cache"))
    model_store.clear_cache()
    yield tmp_path / "cache"
    model_store.clear_cache()


@pytest.fixture
def rng():
    return np.random.default_rng(12345)
