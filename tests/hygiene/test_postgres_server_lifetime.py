"""A PostgreSQL server the tests start is stopped when the pytest session ends, not only at
interpreter exit: mutmut's workers end with os._exit (no exit handler runs), and a server left
behind by each mutant's tests would pile up until the machine runs out of memory."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from tests import postgres_server

ROOT = Path(__file__).resolve().parents[2]


def test_the_server_is_stopped_with_the_session_even_when_the_process_leaves_by_os_exit(tmp_path: Path) -> None:
    postgres_server.server()  # skips, with the reason, where no server can start here
    probe = ROOT / "tests" / "hygiene" / f"test_zz_probe_{os.getpid()}.py"
    where = tmp_path / "pgdata.txt"
    probe.write_text(
        textwrap.dedent(f"""
        from tests import postgres_server


        def test_starts_a_server() -> None:
            running = postgres_server.server()
            open({str(where)!r}, "w").write(str(running.pgdata))
        """)
    )
    try:
        script = (
            "import os, pytest\n"
            f"code = pytest.main(['-q', '-p', 'no:cacheprovider', {str(probe)!r}])\n"
            "os._exit(int(code))\n"
        )
        done = subprocess.run(
            [sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=240, check=False
        )
    finally:
        probe.unlink()
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    pgdata = Path(where.read_text())
    # pg_ctl's pid file goes with a stopped server, and the server's folder with it
    assert not (pgdata / "postmaster.pid").exists()
    assert not pgdata.exists()
