"""The embedded PostgreSQL: started once, reused by every later process, stopped cleanly."""

import os
import subprocess
import sys

import pytest
from django.db import connection

from lifecycle import embedded_db
from tests.support import ROOT, manage

pytestmark = pytest.mark.django_db
on_embedded_server = pytest.mark.skipif(
    bool(os.environ.get("DATABASE_URL")), reason="the suite runs on the server DATABASE_URL names, not the embedded one"
)


@on_embedded_server
def test_the_tests_run_on_the_embedded_server_over_a_unix_socket():
    assert connection.settings_dict["HOST"].startswith("/")
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('listen_addresses'), version()")
        listen_addresses, version = cursor.fetchone()
    assert listen_addresses == ""  # no TCP port to collide with
    assert version.startswith("PostgreSQL ")


@on_embedded_server
def test_a_running_server_is_reused():
    before = embedded_db.ensure_running()
    pid = embedded_db._running_postmaster(embedded_db.pgdata_path()).pid
    again = embedded_db.ensure_running()
    assert again == before
    assert embedded_db._running_postmaster(embedded_db.pgdata_path()).pid == pid


@on_embedded_server
def test_a_command_typed_by_hand_reaches_the_same_server():
    result = manage(
        "shell",
        "--no-imports",
        "-c",
        "from django.db import connection as c; print(c.settings_dict['HOST'])",
        DEBUG="true",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == connection.settings_dict["HOST"]


@on_embedded_server
def test_status_reports_the_running_server():
    result = subprocess.run(
        [sys.executable, "-m", "lifecycle.embedded_db", "status"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0
    assert "embedded PostgreSQL running" in result.stdout


def test_a_server_is_started_and_stopped_in_a_fresh_directory(tmp_path):
    pgdata = tmp_path / "pgdata"
    settings = embedded_db.ensure_running(pgdata)
    try:
        assert settings["HOST"] == str(pgdata)
        assert embedded_db._running_postmaster(pgdata) is not None
    finally:
        assert embedded_db.stop(pgdata, delete=True) is True
    assert not pgdata.exists()
    assert embedded_db.stop(pgdata) is False
