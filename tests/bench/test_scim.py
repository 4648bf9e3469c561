"""bench/scim.py in miniature, on the test database's server: it seeds, looks users up through SCIM
and the client API, and prints each look-up's p95 against the baseline's."""

import pytest

from tests.support import database_url_for_tests, environment, run_bench

pytestmark = pytest.mark.xdist_group("bench")


def test_the_scim_bench_runs_and_prints_each_look_up():
    env = environment(DATABASE_URL=database_url_for_tests(), DATABASE_OWNER_URL=database_url_for_tests("owner"))
    stdout, report = run_bench("scim.py", "--accounts", "300", "--requests", "5", env=env, timeout=300)
    for label in ("api: ?login= (baseline)", "scim: userName eq", "scim: emails.value eq"):
        assert label in stdout, report
