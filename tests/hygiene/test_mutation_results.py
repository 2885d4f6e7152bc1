"""The mutation verdicts kept in the repository (tools/mutation/results.py) survive the trip
through mutmut's cache format unchanged, drop what is no verdict, never overwrite a newer
cache, and the committed store names only mutants of modules under mutation."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from tests.mutation_tools import load_tool

ROOT = Path(__file__).resolve().parents[2]
results = load_tool("results")

MODULE = "dpmem_ref/ledger/chain.py"
META = {
    "exit_code_by_key": {
        "dpmem_ref.ledger.chain.x_record_digest__mutmut_1": 1,  # killed
        "dpmem_ref.ledger.chain.x_record_digest__mutmut_2": 0,  # survived
        "dpmem_ref.ledger.chain.x_record_digest__mutmut_3": 255,  # no verdict
        "dpmem_ref.ledger.chain.x_record_digest__mutmut_4": None,  # not run
        "dpmem_ref.ledger.chain.x_unkeyed__mutmut_1": -24,  # timeout
    },
    "hash_by_function_name": {"x_record_digest": "0123456789ab", "x_unkeyed": "ba9876543210"},
    "type_check_error_by_key": {},
    "durations_by_key": {"dpmem_ref.ledger.chain.x_record_digest__mutmut_1": 0.5},
    "estimated_durations_by_key": {},
}


def _write_meta(mutants: Path, meta: dict[str, object]) -> Path:
    path = mutants / (MODULE + ".meta")
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(meta))
    return path


def test_saved_verdicts_come_back_as_mutmut_meta_without_the_mutants_that_have_no_verdict(tmp_path: Path) -> None:
    _write_meta(tmp_path / "mutants", META)
    assert results.save(tmp_path / "mutants", tmp_path / "store") == 3
    stored = json.loads((tmp_path / "store" / (MODULE + ".json")).read_text())
    assert stored["hash_by_function_name"] == META["hash_by_function_name"]
    assert stored["exit_code_by_key"] == {
        "dpmem_ref.ledger.chain.x_record_digest__mutmut_1": 1,
        "dpmem_ref.ledger.chain.x_record_digest__mutmut_2": 0,
        "dpmem_ref.ledger.chain.x_unkeyed__mutmut_1": -24,
    }

    assert results.restore(tmp_path / "store", tmp_path / "fresh") == 3
    meta = json.loads((tmp_path / "fresh" / (MODULE + ".meta")).read_text())
    # mutmut's SourceFileMutationData.load pops exactly these keys and asserts none is left
    assert set(meta) == {
        "exit_code_by_key",
        "hash_by_function_name",
        "type_check_error_by_key",
        "durations_by_key",
        "estimated_durations_by_key",
    }
    assert meta["exit_code_by_key"] == stored["exit_code_by_key"]
    assert meta["hash_by_function_name"] == META["hash_by_function_name"]


def test_restore_never_overwrites_a_cache_mutmut_already_has(tmp_path: Path) -> None:
    _write_meta(tmp_path / "mutants", META)
    results.save(tmp_path / "mutants", tmp_path / "store")
    newer = dict(META, exit_code_by_key={"dpmem_ref.ledger.chain.x_unkeyed__mutmut_1": 1})
    path = tmp_path / "mutants" / (MODULE + ".meta")
    path.write_text(json.dumps(newer))
    assert results.restore(tmp_path / "store", tmp_path / "mutants") == 0
    assert json.loads(path.read_text()) == newer


def test_restore_fills_a_reset_cache_where_the_function_is_unchanged_and_keeps_mutmuts_own_verdicts(
    tmp_path: Path,
) -> None:
    """mutmut drops its whole cache when [tool.mutmut] changes (a test folder added): the stored
    verdicts of unchanged functions come back, those of a changed function and any verdict
    mutmut holds itself stay as mutmut has them, and a save afterwards keeps them all."""
    path = _write_meta(tmp_path / "mutants", META)
    assert results.save(tmp_path / "mutants", tmp_path / "store") == 3
    reset = dict(
        META,
        exit_code_by_key={
            "dpmem_ref.ledger.chain.x_record_digest__mutmut_1": 0,  # mutmut's own, newer verdict
            "dpmem_ref.ledger.chain.x_record_digest__mutmut_2": None,
            "dpmem_ref.ledger.chain.x_record_digest__mutmut_3": None,
            "dpmem_ref.ledger.chain.x_record_digest__mutmut_4": None,
            "dpmem_ref.ledger.chain.x_unkeyed__mutmut_1": None,
        },
        hash_by_function_name={"x_record_digest": "0123456789ab", "x_unkeyed": "changed00000"},
    )
    path.write_text(json.dumps(reset))
    assert results.restore(tmp_path / "store", tmp_path / "mutants") == 1
    assert json.loads(path.read_text())["exit_code_by_key"] == {
        "dpmem_ref.ledger.chain.x_record_digest__mutmut_1": 0,
        "dpmem_ref.ledger.chain.x_record_digest__mutmut_2": 0,  # from the store: its function is unchanged
        "dpmem_ref.ledger.chain.x_record_digest__mutmut_3": None,  # stored as no verdict: nothing to fill
        "dpmem_ref.ledger.chain.x_record_digest__mutmut_4": None,
        "dpmem_ref.ledger.chain.x_unkeyed__mutmut_1": None,  # its function changed: tested again
    }
    assert results.save(tmp_path / "mutants", tmp_path / "store") == 2


def test_run_sh_restores_again_after_each_mutmut_run_that_can_reset_the_cache() -> None:
    """mutmut drops its cache when it meets a changed [tool.mutmut]: in the stats phase, or in the
    run itself when there was none; the restore at the start of run.sh came before both."""
    run_sh = (ROOT / "tools" / "mutation" / "run.sh").read_text()
    stats = run_sh.index("subprocess_reach.py --everywhere-under")
    assert "tools/mutation/results.py restore" in run_sh[stats : run_sh.index("results.py retest")]
    run = run_sh.index('-m mutmut run --max-children "${MUTATION_MAX_CHILDREN:-2}" \\\n    "${only[@]}"')
    assert "tools/mutation/results.py restore" in run_sh[run : run_sh.index("results.py save")]


def test_a_module_whose_verdicts_were_all_reset_leaves_the_store(tmp_path: Path) -> None:
    path = _write_meta(tmp_path / "mutants", META)
    results.save(tmp_path / "mutants", tmp_path / "store")
    reset = dict(META, exit_code_by_key=dict.fromkeys(META["exit_code_by_key"]))  # every verdict None
    path.write_text(json.dumps(reset))
    assert results.save(tmp_path / "mutants", tmp_path / "store") == 0
    assert not (tmp_path / "store" / (MODULE + ".json")).exists()
    assert results.restore(tmp_path / "store", tmp_path / "fresh") == 0


def test_the_committed_store_names_only_mutants_of_mutated_modules_with_their_function_hashes() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    round4 = (ROOT / "tools" / "mutation" / "round4-modules.txt").read_text().split()
    modules = set(config["only_mutate"]) | {line for line in round4 if line.endswith(".py")}
    known_codes = {0, 1, 3, 5, 24, -24, 33, 34, 35, 36, 37, 152, -9, -11, 2}
    for stored in sorted((ROOT / "tools" / "mutation" / "results").glob("**/*.py.json")):
        module = stored.relative_to(ROOT / "tools" / "mutation" / "results").as_posix().removesuffix(".json")
        assert module in modules, module
        record = json.loads(stored.read_text())
        dotted = module.removesuffix(".py").replace("/", ".")
        for name, code in record["exit_code_by_key"].items():
            prefix, _, function = name.rpartition(".")
            assert prefix.startswith(dotted), name
            mangled = re.fullmatch(r"(x\S*)__mutmut_\d+", function)
            assert mangled, name
            assert mangled.group(1) in record["hash_by_function_name"] or any(
                key.endswith(mangled.group(1)) for key in record["hash_by_function_name"]
            ), name
            assert code in known_codes, (name, code)


def test_retest_drops_only_the_named_verdicts_and_pending_lists_what_has_none(tmp_path: Path) -> None:
    path = _write_meta(tmp_path / "mutants", META)
    survivor = "dpmem_ref.ledger.chain.x_record_digest__mutmut_2"
    assert results.retest({survivor, "dpmem_ref.ledger.chain.x_record_digest__mutmut_4"}, tmp_path / "mutants") == 1
    codes = json.loads(path.read_text())["exit_code_by_key"]
    assert codes == {**META["exit_code_by_key"], survivor: None}
    assert results.pending(["dpmem_ref.ledger.chain.x_record_digest__*"], tmp_path / "mutants") == [
        survivor,
        "dpmem_ref.ledger.chain.x_record_digest__mutmut_4",
    ]
    # a killed mutant, a timeout and a 255 are not pending: naming them would test them again
    assert (
        results.pending(["dpmem_ref.ledger.chain.x_unkeyed__*", "*__mutmut_1", "*__mutmut_3"], tmp_path / "mutants")
        == []
    )


def _git(folder: Path, *args: str) -> str:
    import subprocess

    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def test_the_tests_of_changed_test_files_and_of_files_importing_a_changed_helper_are_forgotten(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "helper.py").write_text("VALUE = 1\n")
    (tests / "test_edited.py").write_text("def test_a(): pass\n")
    (tests / "test_untouched.py").write_text("def test_b(): pass\n")
    (tests / "test_uses_helper.py").write_text("from tests.helper import VALUE\ndef test_c(): pass\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "commit", "-qm", "tests")
    collected_at = _git(tmp_path, "rev-parse", "HEAD")
    ids = ["tests/test_edited.py::test_a", "tests/test_untouched.py::test_b", "tests/test_uses_helper.py::test_c[1]"]
    stats = {
        "tests_by_mangled_function_name": {"dpmem_ref.m.x_f": ids, "dpmem_ref.m.x_g": ids[1:]},
        "duration_by_test": dict.fromkeys(ids, 0.5),
        "git_commit": collected_at,
    }
    mutants = tmp_path / "mutants"
    mutants.mkdir()
    (mutants / "mutmut-stats.json").write_text(json.dumps(stats))
    (tests / "test_edited.py").write_text("def test_a(): assert True\n")
    (tests / "helper.py").write_text("VALUE = 2\n")
    _git(tmp_path, "commit", "-qam", "edited")
    (tests / "test_new.py").write_text("def test_d(): pass\n")  # untracked: new names to mutmut anyway

    assert results.forget_changed_tests(mutants, tmp_path) == 2
    after = json.loads((mutants / "mutmut-stats.json").read_text())
    assert after["duration_by_test"] == {"tests/test_untouched.py::test_b": 0.5}
    assert after["tests_by_mangled_function_name"] == {
        "dpmem_ref.m.x_f": ["tests/test_untouched.py::test_b"],
        "dpmem_ref.m.x_g": ["tests/test_untouched.py::test_b"],
    }
    assert after["git_commit"] == _git(tmp_path, "rev-parse", "HEAD")
    # once forgotten, nothing has changed since: the next call forgets nothing
    assert results.forget_changed_tests(mutants, tmp_path) == 0

    # stats taken at a commit this clone does not know: every test is forgotten
    (mutants / "mutmut-stats.json").write_text(json.dumps({**stats, "git_commit": "0" * 40}))
    assert results.forget_changed_tests(mutants, tmp_path) == 3
    assert json.loads((mutants / "mutmut-stats.json").read_text())["duration_by_test"] == {}
