"""Issue 22.9: torch threads for CPU generation follow the cores other processes leave free
(two OpenMP threads on two busy cores mostly wait for each other)."""

from __future__ import annotations

import pytest

from dpmem_eval.pipeline.hf_backend import cpu_threads


@pytest.fixture(autouse=True)
def _no_overrides(monkeypatch):
    monkeypatch.delenv("DPMEM_CPU_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)


@pytest.mark.parametrize("cpus,load,threads", [
    (2, 1.0, 2),    # only this process: both cores
    (2, 0.2, 2),
    (2, 2.0, 1),    # one other busy process
    (2, 24.0, 1),   # a loaded machine: never fewer than one
    (16, 1.0, 16),
    (16, 5.0, 12),
])
def test_threads_follow_the_free_cores(cpus, load, threads):
    assert cpu_threads(cpus, load) == threads


def test_explicit_settings_win(monkeypatch):
    monkeypatch.setenv("DPMEM_CPU_THREADS", "3")
    assert cpu_threads(2, 24.0) == 3
    monkeypatch.setenv("DPMEM_CPU_THREADS", "")
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert cpu_threads(2, 24.0) is None  # torch's own default, which honours OMP_NUM_THREADS
