"""The ledger suites' shared fixture: a fresh store for every row of the store-URL scheme
table (`urls.SCHEMES`), so that a backend added there runs every suite that asks for it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from dpmem_ref.ledger import LedgerStore
from dpmem_ref.ledger.urls import SCHEMES
from tests.ledger.test_ledger_contract import make_store


@pytest.fixture(params=[scheme.name for scheme in SCHEMES])
def ledger_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LedgerStore]:
    backend = make_store(request.param, tmp_path)
    yield backend
    backend.close()
