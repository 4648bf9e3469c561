"""bench/mailroom.py at tiny sizes into aiosmtpd: every figure measured (the bench checks each run sent
every e-mail itself). Its figures are measured, never asserted: this checks that every step ran."""

import pytest

from tests.support import run_bench

# It starts servers and makes a scratch database: one worker runs the benches one after the other.
pytestmark = pytest.mark.xdist_group("bench")

LINES = [
    "drain over SMTP",
    "plain smtplib, pre-rendered",
    "drain_mailroom, whole command",
    "smtplib script, own process",
    "drain_mailroom over an empty queue",
    "claim + render + mark, no sending",
    "claim + mark only",
    "claim + mark, 2 drains at once",
    "mail run, credentials digested",
    "mail run, credentials kept plain",
    "commit -> SMTP accept, listen_mailroom",
]


# Smaller than --quick: that every step runs is what this checks, not its figures.
TINY = ["--tokens", "60", "--repeat", "1", "--commands", "1", "--drains", "2"]
TINY += ["--latency-samples", "3", "--schedule-samples", "0"]


def test_a_tiny_run_measures_every_step_with_drains_at_once():
    stdout, report = run_bench("mailroom.py", *TINY)
    lines = stdout.splitlines()
    assert lines[0].startswith("PostgreSQL ") and "60 tokens" in lines[0] and "into aiosmtpd" in lines[0], report
    assert [line[: len(label)] for line, label in zip(lines[1:], LINES, strict=True)] == LINES, report
    assert lines[8].endswith("tokens/s together"), report
