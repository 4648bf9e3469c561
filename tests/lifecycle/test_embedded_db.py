"""The embedded PostgreSQL: started once, reused by every later process, stopped cleanly."""

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import psycopg
import pytest
from django.core.exceptions import ImproperlyConfigured
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


@pytest.fixture
def scratch(tmp_path_factory):
    """A directory for a server of its own, where the server's user can reach it (pytest's tmp_path
    lies under a 0700 directory, and the server no longer widens anyone's directories)."""
    (ROOT / ".local").mkdir(exist_ok=True)
    path = Path(tempfile.mkdtemp(prefix="t-", dir=ROOT / ".local"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def superuser_connection(pgdata, databases, dbname="postgres", **kwargs):
    passwords = json.loads((pgdata / embedded_db.CREDENTIALS_FILE).read_text())
    place = {"host": databases["owner"]["HOST"], "port": databases["owner"]["PORT"], "autocommit": True}
    return psycopg.connect(dbname=dbname, user=embedded_db.SUPERUSER, password=passwords["postgres"], **place | kwargs)


def test_a_server_is_started_and_stopped_in_a_fresh_directory(scratch):
    pgdata = scratch / "pgdata"
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


def test_a_database_an_earlier_version_made_as_the_superuser_is_handed_to_the_owner_role(scratch):
    pgdata = scratch / "pgdata"
    databases = embedded_db.ensure_running(pgdata)
    try:
        with superuser_connection(pgdata, databases) as superuser:
            superuser.execute("ALTER DATABASE lifecycle OWNER TO postgres")
        with superuser_connection(pgdata, databases, "lifecycle") as superuser:
            superuser.execute("CREATE TYPE mood AS ENUM ('calm')")
            superuser.execute("CREATE TABLE things (id bigserial PRIMARY KEY, mood mood)")
            superuser.execute("CREATE FUNCTION answer() RETURNS int LANGUAGE sql AS 'SELECT 42'")
        embedded_db.ensure_running(pgdata)
        with superuser_connection(pgdata, databases, "lifecycle") as superuser:
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


# Issue 8, item 4: as root, a long data path put the socket in a world-writable directory (any local
# user became superuser), start-up widened every parent directory to o+rx, and authentication was trust.


@on_embedded_server
@pytest.mark.parametrize("role", [embedded_db.SUPERUSER, embedded_db.OWNER, embedded_db.RUNTIME_LOGIN])
def test_no_role_signs_in_without_its_password(role):
    host = connection.settings_dict["HOST"]
    with pytest.raises(psycopg.OperationalError, match="no password supplied|password authentication failed"):
        psycopg.connect(host=host, dbname="postgres", user=role)
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(host=host, dbname="postgres", user=role, password="guess")


@on_embedded_server
def test_the_passwords_are_readable_by_their_owner_only():
    credentials = embedded_db.pgdata_path() / embedded_db.CREDENTIALS_FILE
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    assert stat.S_IMODE(embedded_db.pgdata_path().stat().st_mode) == 0o700


def test_a_long_data_path_gets_a_private_socket_directory(scratch):
    pgdata = scratch / ("d" * (110 - len(str(scratch)))) / "pgdata"
    assert len(str(pgdata)) > embedded_db.SOCKET_PATH_MAX
    databases = embedded_db.ensure_running(pgdata)
    socket_dir = Path(databases["default"]["HOST"])
    try:
        assert socket_dir != pgdata
        assert stat.S_IMODE(socket_dir.stat().st_mode) == 0o700  # not world-writable, not shared
        with superuser_connection(pgdata, databases) as superuser:
            assert superuser.execute("SELECT 1").fetchone() == (1,)
    finally:
        embedded_db.stop(pgdata, delete=True)
    assert not socket_dir.exists()


def test_starting_leaves_the_parent_directories_modes_as_they_were(scratch):
    parent = scratch / "parent"
    parent.mkdir(mode=0o711)  # searchable, not listable, by others
    parent.chmod(0o711)
    before = {path: stat.S_IMODE(path.stat().st_mode) for path in [parent, scratch, *scratch.parents]}
    pgdata = parent / "pgdata"
    try:
        embedded_db.ensure_running(pgdata)
        after = {path: stat.S_IMODE(path.stat().st_mode) for path in before}
    finally:
        embedded_db.stop(pgdata, delete=True)
    assert after == before


@pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the server as another user")
def test_a_data_directory_the_servers_user_cannot_reach_is_refused_with_the_directory_named(scratch):
    closed = scratch / "closed"
    closed.mkdir(mode=0o700)
    with pytest.raises(ImproperlyConfigured, match=f"cannot reach its data directory .*: {closed} is not searchable"):
        embedded_db.ensure_running(closed / "pgdata")
    assert stat.S_IMODE(closed.stat().st_mode) == 0o700


def test_an_unwritable_data_directory_is_one_sentence_naming_the_setting():
    result = subprocess.run(
        [sys.executable, "-m", "lifecycle.embedded_db", "start"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "LIFECYCLE_PGDATA": "/proc/lifecycle/pgdata"},
    )
    assert result.returncode == 1
    assert result.stderr.startswith("Configuration error: LIFECYCLE_PGDATA: cannot use /proc/lifecycle/pgdata")
    assert "Traceback" not in result.stderr


def test_a_data_directory_an_earlier_version_made_with_trust_gets_passwords(scratch):
    pgdata = scratch / "pgdata"
    databases = embedded_db.ensure_running(pgdata)
    try:
        # What an earlier version left: trust for everyone, no passwords kept.
        with superuser_connection(pgdata, databases) as superuser:
            (pgdata / "pg_hba.conf").write_text("local all all trust\n")
            superuser.execute("SELECT pg_reload_conf()")
        (pgdata / embedded_db.CREDENTIALS_FILE).unlink()
        place = {"host": databases["owner"]["HOST"], "port": databases["owner"]["PORT"], "dbname": "postgres"}
        psycopg.connect(user=embedded_db.RUNTIME_LOGIN, **place).close()  # trust: no password asked

        upgraded = embedded_db.ensure_running(pgdata)
        with pytest.raises(psycopg.OperationalError, match="no password supplied"):
            psycopg.connect(user=embedded_db.RUNTIME_LOGIN, **place)
        psycopg.connect(user=embedded_db.RUNTIME_LOGIN, password=upgraded["default"]["PASSWORD"], **place).close()
        rules = [
            line.split() for line in (pgdata / "pg_hba.conf").read_text().splitlines() if line[:1] not in ("", "#")
        ]
        assert rules == [["local", "all", "all", "scram-sha-256"]]
    finally:
        embedded_db.stop(pgdata, delete=True)
