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
    databases = embedded_db.ensure_running(pgdata)
    try:
        assert {alias: settings["USER"] for alias, settings in databases.items()} == {
            "default": "lifecycle_app",
            "owner": "lifecycle_owner",
        }
        assert databases["default"]["HOST"] == str(pgdata)
        assert embedded_db._running_postmaster(pgdata) is not None
    finally:
        assert embedded_db.stop(pgdata, delete=True) is True
    assert not pgdata.exists()
    assert embedded_db.stop(pgdata) is False


def test_a_database_an_earlier_version_made_as_the_superuser_is_handed_to_the_owner_role(tmp_path):
    import psycopg

    pgdata = tmp_path / "pgdata"
    databases = embedded_db.ensure_running(pgdata)
    place = {"host": databases["owner"]["HOST"], "port": databases["owner"]["PORT"], "autocommit": True}
    try:
        with psycopg.connect(dbname="postgres", user=embedded_db.SUPERUSER, **place) as superuser:
            superuser.execute("ALTER DATABASE lifecycle OWNER TO postgres")
        with psycopg.connect(dbname="lifecycle", user=embedded_db.SUPERUSER, **place) as superuser:
            superuser.execute("CREATE TYPE mood AS ENUM ('calm')")
            superuser.execute("CREATE TABLE things (id bigserial PRIMARY KEY, mood mood)")
            superuser.execute("CREATE FUNCTION answer() RETURNS int LANGUAGE sql AS 'SELECT 42'")
        embedded_db.ensure_running(pgdata)
        with psycopg.connect(dbname="lifecycle", user=embedded_db.SUPERUSER, **place) as superuser:
            owners = superuser.execute(
                "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'lifecycle'"
                " UNION ALL SELECT pg_get_userbyid(relowner) FROM pg_class"
                " WHERE relname IN ('things', 'things_id_seq', 'things_pkey')"
                " UNION ALL SELECT pg_get_userbyid(proowner) FROM pg_proc WHERE proname = 'answer'"
                " UNION ALL SELECT pg_get_userbyid(typowner) FROM pg_type WHERE typname = 'mood'"
            ).fetchall()
        assert owners == [(embedded_db.OWNER,)] * 6
    finally:
        embedded_db.stop(pgdata, delete=True)
