"""The soak test's short form: the whole product under load while it maintains itself, a mail worker
killed and the database restarted (bench/soak.py, on a data directory of its own; its defaults are
the long form)."""

import json
import subprocess
import sys

import pytest

from bench.soak import OLD_SIGN_UPS
from tests.support import ROOT

# The soak and the load run each start a server, an embedded PostgreSQL and workers of their own: one
# worker runs them one after the other, never both at once on two cores.
pytestmark = pytest.mark.xdist_group("bench")

SHORT_FORM = ["--clients", "4", "--seconds", "20"]


def test_under_load_with_a_worker_killed_and_the_database_restarted_every_promise_holds():
    done = subprocess.run(
        [sys.executable, "-m", "bench.soak", *SHORT_FORM, "--json"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    report = done.stdout + done.stderr
    assert done.stdout.strip(), report
    figures = json.loads(done.stdout.strip().splitlines()[-1])

    # Requests failed only while the database was down, each as the 503 page; and it was down.
    assert figures["failures"] == [], report
    assert figures["failed_outside_outage"] == 0, report
    assert figures["failed_in_outage"] >= 1, report
    # Load happened: every client went through whole flows. (Not a rate: on 2 shared cores the count of
    # flows in 20 s varies with what else runs: a floor of 20 is too high when another test run slows it.)
    assert figures["completed"]["recovered"] >= 4, report
    # Every due e-mail arrived; a second copy only for a sent-mark the kill or the restart cut off.
    assert figures["emails_lost"] == [], report
    assert figures["emails_unexpected"] == [], report
    assert figures["emails_doubled_unexplained"] == [], report
    assert figures["emails_marked_sent_when_used_unexplained"] == [], report
    assert figures["lost_marks"] <= figures["lost_marks_bound"], report
    assert figures["emails_received"] >= figures["emails_expected"] > 0, report
    # Every change audited once; the upkeep made this month's partition under load, and the sweep ran.
    audit = figures["audit"]
    assert (audit["missing"], audit["unexplained"]) == (0, 0), report
    assert audit["this_months_partition_made"] and audit["rows_in_default_partition"] == 0, report
    assert audit["old_sign_ups_left"] == 0, report
    assert audit["old_sign_ups_deleted_and_audited"] == OLD_SIGN_UPS, report  # each once, with the reason
    assert audit["old_tokens_deleted_and_audited"] == OLD_SIGN_UPS, report  # one activation token each
    # The listeners and the django-q2 cluster came through the restart.
    assert figures["processes"]["problems"] == [], report
    assert figures["ok"] and done.returncode == 0, report
