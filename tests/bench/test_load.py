"""bench/load.py's quick mode: gunicorn on an embedded PostgreSQL of its own, every
endpoint driven at two concurrencies, the mail drain and the webhook dispatch with 1, 2 and 4 workers.
Its figures are measured, never asserted: this checks that every part ran and answered as expected."""

import json

import pytest

from tests.support import run_bench

# The soak and the load run each start a server, an embedded PostgreSQL and workers of their own: one
# worker runs them one after the other, never both at once on two cores.
pytestmark = pytest.mark.xdist_group("bench")

ENDPOINTS = {
    "GET /recover/",
    "POST /recover/ (CSRF token)",
    "API GET /api/v1/accounts/{id}",
    "API POST /api/v1/accounts (Idem.-Key)",
    "admin: account list",
    "admin: an account's page",
    "bare view: GET /bench/accounts/{id}",
}


# Smaller than --quick alone: that every part runs and answers is what this checks, not its figures.
SMALLER = ["--seconds", "0.5", "--accounts", "500", "--messages", "60"]


def test_quick_run_answers_every_endpoint_without_an_error_and_drains_with_each_worker_count():
    stdout, report = run_bench("load.py", "--quick", "--json", *SMALLER)
    figures = json.loads(stdout.strip().splitlines()[-1])

    assert ENDPOINTS <= set(figures["endpoints"]), report
    for label, steps in figures["endpoints"].items():
        assert [step["clients"] for step in steps] == [1, 4], (label, report)
        for step in steps:
            assert step["answered"] > 0 and step["rate"] > 0, (label, step, report)
            assert step["errors"] == 0 and step["error_kinds"] == {}, (label, step, report)
    assert figures["errors"] == 0 and figures["ok"], report
    references = figures["api_references"]
    assert references["read_over_bare_view"] > 0 and references["write_over_in_process"] > 0, report
    assert figures["conn_max_age"] == 60, report  # the product's default, not the bench's own
    for label in ("mail drain", "webhook dispatch"):
        runs = figures["workers"][label]["runs"]
        assert [run["workers"] for run in runs] == [1, 2, 4], (label, report)
        assert all(run["rate"] > 0 for run in runs), (label, report)
