"""A bench's scratch database (bench/scratch.py): made and migrated by the owner role, the runtime role
working in it, dropped when the bench ends, also by an error or Ctrl-C. Each bench runs in a process of
its own, on the test database's server here."""

import signal
import subprocess
import sys

import pytest
from django.db import connection

from tests.support import ROOT, database_url_for_tests, environment

# A bench in miniature: prints what it sees inside the block, then fails or waits to be interrupted.
BENCH = """
import sys, time
import bench.django_setup
from django.db import connections
from bench.scratch import scratch_database

names = connections["default"].settings_dict["NAME"], connections["owner"].settings_dict["NAME"]
try:
    with scratch_database() as name:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT current_database(), current_user, to_regclass('accounts') IS NOT NULL")
            print("inside", name, *cursor.fetchone(), flush=True)
        if sys.argv[1] == "fail":
            raise RuntimeError("the bench failed")
        time.sleep(60)
except (RuntimeError, KeyboardInterrupt) as error:
    print("ended by", type(error).__name__)
print("names put back", (connections["default"].settings_dict["NAME"], connections["owner"].settings_dict["NAME"]) == names)
"""


def bench(how: str) -> subprocess.Popen:
    env = environment(DATABASE_URL=database_url_for_tests(), DATABASE_OWNER_URL=database_url_for_tests("owner"))
    return subprocess.Popen(
        [sys.executable, "-c", BENCH, how],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def scratch_databases() -> list[str]:
    """The scratch databases of this test database (another worker's test database has its own)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT datname FROM pg_database WHERE datname = current_database() || '_bench'")
        return [name for (name,) in cursor.fetchall()]


@pytest.mark.django_db
def test_the_bench_works_in_a_migrated_scratch_database_as_the_runtime_role_and_an_error_drops_it():
    run = bench("fail")
    output = run.communicate(timeout=300)[0]
    name = f"{connection.settings_dict['NAME']}_bench"
    runtime_role = connection.settings_dict["USER"]
    assert f"inside {name} {name} {runtime_role} True" in output, output
    assert "ended by RuntimeError" in output and "names put back True" in output, output
    assert scratch_databases() == []


@pytest.mark.django_db
def test_ctrl_c_in_the_bench_drops_its_scratch_database():
    run = bench("wait")
    for line in run.stdout:
        if line.startswith("inside"):
            break
    assert scratch_databases() == [f"{connection.settings_dict['NAME']}_bench"]
    run.send_signal(signal.SIGINT)
    output = run.communicate(timeout=120)[0]
    assert "ended by KeyboardInterrupt" in output and "names put back True" in output, output
    assert scratch_databases() == []
