"""The command-line conventions users expect: --version on both commands, help
on a bare command, --log-level, and the line number of a bad --queries line."""

from __future__ import annotations

import contextlib
import io
import logging

import pytest

from tests.kernel_fixtures import run_cli

FIGURE2 = "examples/figure2.toml"


def test_dpmem_version():
    import dpmem_ref

    code, out, err = run_cli(["--version"])
    assert code == 0 and out.strip() == f"dpmem {dpmem_ref.__version__}"


def test_bare_dpmem_prints_help_and_succeeds():
    code, out, err = run_cli([])
    assert code == 0 and out.startswith("usage: dpmem") and "{run,check,audit" in out and err == ""


@pytest.mark.parametrize("line,content", [
    (4, "affordable-dinner\n\n# a comment\nno-such-query\n"),
    (1, "typo\naffordable-dinner\n"),
])
def test_queries_file_error_names_the_line(tmp_path, line, content):
    queries = tmp_path / "q.txt"
    queries.write_text(content)
    code, out, err = run_cli(["run", FIGURE2, "--store", "M", "--queries", str(queries), "--seed", "0"])
    assert code == 2 and out == ""
    assert err.startswith(f"dpmem: error: --queries line {line}: query: expected one of ") and err.count("\n") == 1


def test_queries_file_undecodable_bytes_name_the_line(tmp_path):
    queries = tmp_path / "q.txt"
    queries.write_bytes(b"affordable-dinner\naffordable-dinner\n\xff\n")
    code, _, err = run_cli(["run", FIGURE2, "--store", "M", "--queries", str(queries)])
    assert code == 2 and err.startswith("dpmem: error: --queries line 3: expected UTF-8 text")


def test_log_level_turns_on_the_kernel_logs(tmp_path):
    root = logging.getLogger()
    saved = (root.level, list(root.handlers))
    try:
        root.handlers.clear()
        code, out, err = run_cli(["--log-level", "DEBUG", "run", FIGURE2, "--store", "M", "--queries",
                                  "examples/figure2-queries.txt", "--seed", "0", "--no-release-deadline"])
        assert code == 0
        assert root.level == logging.DEBUG
        code, _, err = run_cli(["--log-level", "LOUD", "run", FIGURE2])
        assert code == 2 and "--log-level" in err
    finally:
        root.setLevel(saved[0])
        root.handlers[:] = saved[1]


def _eval(argv: list[str]) -> tuple[int, str]:
    from dpmem_eval.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            code = main(argv)
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    return code, out.getvalue()


def test_dpmem_eval_version_and_bare_help():
    import dpmem_eval

    assert _eval(["--version"]) == (0, f"dpmem-eval {dpmem_eval.__version__}\n")
    code, out = _eval([])
    assert code == 0 and out.startswith("usage: dpmem-eval") and "run" in out


def test_an_unusable_path_is_one_line_of_bad_input_not_an_internal_error(tmp_path, capsys):
    """A 5,000-character file name (ENAMETOOLONG) is the user's input, named as such, exit 2;
    the path itself is not echoed."""
    from dpmem_ref.cli import main

    long_name = str(tmp_path / ("a" * 5000))
    for argv in (["ledger", "verify", long_name], ["ledger", "backup", long_name, str(tmp_path / "b.sqlite")]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "internal error" not in err and "a" * 100 not in err
