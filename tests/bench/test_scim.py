"""bench/scim.py in miniature, on the test database's server: it seeds, looks users up through SCIM
and the client API, and prints each look-up's p95 against the baseline's."""

import subprocess
import sys

import pytest

from tests.support import ROOT, database_url_for_tests, environment

pytestmark = pytest.mark.xdist_group("bench")


def test_the_scim_bench_runs_and_prints_each_look_up():
    env = environment(DATABASE_URL=database_url_for_tests(), DATABASE_OWNER_URL=database_url_for_tests("owner"))
    result = subprocess.run(
        [sys.executable, "bench/scim.py", "--accounts", "300", "--requests", "5"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    for label in ("api: ?login= (baseline)", "scim: userName eq", "scim: emails.value eq"):
        assert label in result.stdout, result.stdout
