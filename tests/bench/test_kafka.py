"""bench/kafka.py in miniature: a broker of its own, a scratch database of the test database's server,
every figure printed. Its figures are measured, never asserted: this checks that every part ran."""

import subprocess
import sys

import pytest

from tests.support import ROOT, database_url_for_tests, environment, run_bench

TINY = ["--events", "300", "--repeat", "1", "--latency-samples", "3", "--kept", "3000", "--due", "300"]
TINY += ["--claims", "5", "--hot", "30", "--others", "100"]

LINES = (
    "relay to the broker",
    "bare confluent-kafka producer",
    "claim + mark, broker stubbed",
    "CPU an event, relay:",
    "CPU an event, bare producer:",
    "commit -> consumer, publish_events",
    "claim of 100 due events with 3,000 kept:",
    "claim of 100, rolled back",
    "claim of 100 before any parking, rolled back",
    "claim of 100 once parked, rolled back",
    "Update on event_publications",
    "one account with 30 unpublished events, then 100 events of 100 accounts:",
    "drained in 30 batches",
)


@pytest.mark.django_db
def test_a_tiny_run_prints_every_figure():
    env = environment(DATABASE_URL=database_url_for_tests(), DATABASE_OWNER_URL=database_url_for_tests("owner"))
    stdout, report = run_bench("kafka.py", *TINY, env=env, timeout=300)
    for line in LINES:
        assert line in stdout, (line, report)
    assert "relay / bare = " in stdout and "(median of 1 rounds)" in stdout, report


def test_a_part_it_does_not_know_is_refused_in_one_sentence():
    done = subprocess.run(
        [sys.executable, "bench/kafka.py", "--parts", "rate,speed"],
        cwd=ROOT,
        env=environment(DATABASE_URL=database_url_for_tests()),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert (
        done.stderr.strip()
        .splitlines()[-1]
        .endswith("--parts takes some of rate, latency, claim, hot, separated by commas.")
    )
    assert "Traceback" not in done.stderr
