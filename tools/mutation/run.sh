#!/usr/bin/env bash
# Mutation testing of the kernel's core modules with mutmut 3 (pinned in the dev extra),
# then tools/mutation/REPORT.md from its results (tools/mutation/report.py).
#
# The modules are [tool.mutmut] only_mutate in pyproject.toml: the ONE list (repoint it
# there when modules move). The tests are its pytest_add_cli_args_test_selection (fast
# kernel and proof tests); mutmut runs, per mutant, only the tests that reach the mutated
# function, under the ci Hypothesis profile without the shrink phase.
#
# Env: PYTHON (default .venv/bin/python), MUTATION_MAX_CHILDREN (default 2; also the pre-pass's
# jobs), MUTATION_PREPASS_S (seconds of tools/mutation/prepass.py before mutmut; default half),
# MUTATION_ONLY (space-separated mutant-name patterns, e.g. "dpmem_ref.ledger.chain.*": test
# only those of its mutants without a verdict now; the report counts the others as not checked),
# MUTATION_TIMEOUT_S (default 5400: the run is bounded; an interrupted run still gets a
# report of what was checked), MUTATION_FRESH=1 to discard mutmut's cached results (and the
# verdicts kept in tools/mutation/results/).
# mutmut's cache (mutants/) is lost with the machine, so its verdicts are also kept in the
# repository (tools/mutation/results.py): restored before the run where mutants/ has none,
# saved after it. Commit tools/mutation/results/ with the report.
# Rerunning without MUTATION_FRESH tests only the mutants mutmut has no result for (those of
# functions changed since: mutmut compares per-function hashes) and, in the same run, re-tests
# every survivor of the cached run not judged equivalent against today's tests (its cached
# verdict is dropped first: mutmut skips cached results, and a test added to kill a survivor
# would never be run against it).
# CPU-heavy: runs under `nice -n 10`.
set -euo pipefail
cd "$(dirname "$0")/../.."

PY="${PYTHON:-.venv/bin/python}"
LOG="${TMPDIR:-/tmp}/dpmem-mutmut-$$.log"
export HYPOTHESIS_PROFILE=ci DPMEM_MUTATION_RUN=1 DPMEM_MUTMUT=1
# A temp folder of its own: pytest keeps only the newest few numbered basetemp folders under
# the temp root and deletes older ones, so other pytest sessions on the machine (a developer's
# test runs) would delete a running mutant's tmp_path under it; the mutant's run then crashes
# (exit 255) and mutmut books it as a timeout, a kill the tests never made.
MUTATION_TMP="$(mktemp -d "${TMPDIR:-/tmp}/dpmem-mutmut-tmp.XXXXXX")"
export TMPDIR="$MUTATION_TMP"
trap 'rm -rf "$MUTATION_TMP"' EXIT
unset PYTHONPATH  # mutmut puts its mutated copy (mutants/) first on sys.path
# The type-check pre-filter ([tool.mutmut] type_check_command) runs `python` inside mutants/: the venv's.
export PATH="$(cd "$(dirname "$PY")" && pwd):$PATH"
if [ "${MUTATION_FRESH:-0}" = "1" ]; then
  rm -rf mutants tools/mutation/results
fi
"$PY" tools/mutation/results.py restore
# Tests edited since mutmut took their stats (a new assertion, a fixture now built per test) are
# forgotten, so that mutmut takes their stats again as new tests: it maps a mutant to the tests
# that reached its function when their stats were taken, and re-takes only tests of new names.
forgotten=0
if [ -f mutants/mutmut-stats.json ]; then
  forgotten="$("$PY" tools/mutation/results.py forget-changed-tests)"
fi
# Which tests reach each function inside a child process (a real `dpmem serve`, a CLI process):
# mutmut records in-process calls only. Its stats first (a run that names no mutant: all of them,
# or those of the forgotten tests), then the edges the children add
# (tools/mutation/subprocess_reach.py, for the tests mutmut has stats of), before any mutant runs.
if [ ! -f mutants/mutmut-stats.json ] || [ "$forgotten" != "0" ]; then
  nice -n 10 "$PY" -m mutmut run --max-children "${MUTATION_MAX_CHILDREN:-2}" "dpmem_ref.no_such_module.*" >"$LOG.stats" 2>&1 || true
fi
nice -n 10 "$PY" tools/mutation/subprocess_reach.py --everywhere-under dpmem_ref/serve/
# mutmut drops every verdict of its cache when [tool.mutmut] changed (a test folder added to the
# selection); its stats phase above is where it does so. The stored verdicts of unchanged
# functions go back in before anything reads or saves the cache (results.py, `restore`).
"$PY" tools/mutation/results.py restore

status=0
deadline=$(( $(date +%s) + ${MUTATION_TIMEOUT_S:-5400} ))
if [ -d mutants ]; then
  # Survivors (and no-tests, suspicious) of the cached run and its mutants without a verdict
  # (exit 255), except survivors judged equivalent (no test can kill them; re-testing one runs
  # every test that reaches it): their cached verdicts are dropped, so the one run below tests
  # them against today's tests with the mutants that have none (mutmut skips cached results).
  "$PY" tools/mutation/report.py --list-unjudged | "$PY" tools/mutation/results.py retest
fi
# The cheap first pass (tools/mutation/prepass.py): each mutant without a verdict on the cheapest
# of its tests, for MUTATION_PREPASS_S seconds (default: half the time left; 0: none); its
# confirmed kills go into mutants/ before mutmut's run, which tests the rest with all of theirs.
left=$(( deadline - $(date +%s) ))
prepass_s="${MUTATION_PREPASS_S:-$(( left / 2 ))}"
if [ "$prepass_s" -gt 0 ]; then
  read -r -a prepass_patterns <<<"${MUTATION_ONLY:-dpmem_ref.*}"
  nice -n 10 "$PY" tools/mutation/prepass.py run "${prepass_patterns[@]}" \
    --jobs "${MUTATION_MAX_CHILDREN:-2}" --deadline-s "$prepass_s" >"$LOG.prepass" 2>&1 || true
  tail -n 1 "$LOG.prepass"
fi
"$PY" tools/mutation/prepass.py apply
only=()
if [ -n "${MUTATION_ONLY:-}" ]; then
  # mutmut re-tests every mutant it is named, so the patterns go in as the names of their
  # mutants without a verdict (a pattern alone would re-test every cached kill).
  read -r -a patterns <<<"$MUTATION_ONLY"
  mapfile -t only < <("$PY" tools/mutation/results.py pending "${patterns[@]}" | sed '/^$/d')
fi
if [ -n "${MUTATION_ONLY:-}" ] && [ "${#only[@]}" = "0" ]; then
  echo "MUTATION_ONLY: every mutant matching '$MUTATION_ONLY' has a verdict"
else
  timeout $(( deadline - $(date +%s) )) nice -n 10 "$PY" -m mutmut run --max-children "${MUTATION_MAX_CHILDREN:-2}" \
    "${only[@]}" >"$LOG" 2>&1 || status=$?
fi
echo "mutmut run: exit $status (log: $LOG)"
# Again before the save: a [tool.mutmut] change noticed by the run itself (no stats phase this
# time) drops the cache there. A survivor sent back above and not reached keeps its stored verdict
# (it is sent back again next time); a changed function's mutants are not filled.
"$PY" tools/mutation/results.py restore
"$PY" tools/mutation/results.py save
"$PY" tools/mutation/report.py --out tools/mutation/REPORT.md --run-status "$status"
