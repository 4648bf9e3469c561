"""bench/api.py's quick mode: the API served beside the benches' bare views (bench/bare_site.py), each
step measured and every answer checked by the bench itself. Its figures are measured, never asserted:
this checks that every step ran and the aims were printed."""

import pytest

from tests.support import run_bench

# It starts a server and makes a scratch database: one worker runs the benches one after the other.
pytestmark = pytest.mark.xdist_group("bench")

STEPS = [
    "in-process account_provision()",
    "bare view: key and rate, account_provision()",
    "  + the Idempotency-Key's bookkeeping",
    "POST /api/v1/accounts, a fresh Idempotency-Key",
    "the same POSTs again: the stored responses",
    "in-process Account.objects.get()",
    "GET bare view: the account's row as JSON",
    "  + the bearer key's look-up",
    "  + its rate-limit hit, in the same statement",
    "GET /api/v1/accounts/{id}",
    "in-process key and rate, synchronous_commit off",
    "  the same statement, synchronous_commit on",
]


# Fewer calls than --quick's 100 a step: that every step runs and every answer is right (the bench checks
# each one, and every replay's body) is what this checks, not its figures.
FEWER = ["--rounds", "2", "--requests", "20"]


def test_quick_run_measures_every_step_at_one_thread_and_prints_the_aims():
    stdout, report = run_bench("api.py", "--quick", *FEWER)
    lines = stdout.splitlines()

    assert lines[0].startswith("--quick: ") and "CONN_MAX_AGE 60" in lines[0], report
    # Production's server and the lean client, for the bare views and the API alike.
    assert "the API and the bare views on gunicorn" in lines[0] and "http.client, a keep-alive" in lines[0], report
    measured = [line[:52].rstrip() for line in lines[2:-1]]
    assert measured == [step.rstrip() for step in STEPS], report
    assert all(line[52:].split()[0] == "1" for line in lines[2:-1]), report  # one thread each
    assert lines[-1].startswith("aims at 1 thread: the API's read "), report
    assert "API bug" not in report
