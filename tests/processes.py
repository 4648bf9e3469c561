"""Running manage.py in other processes against the test database, as cron, a worker or a person would."""

import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote

from django.db import connection

ROOT = Path(__file__).resolve().parent.parent


def database_url_for_tests() -> str:
    settings = connection.settings_dict
    host = quote(settings["HOST"], safe="") if settings["HOST"] else ""
    port = f":{settings['PORT']}" if settings["PORT"] else ""
    return f"postgres://{settings['USER']}@{host}{port}/{settings['NAME']}"


def environment(**env) -> dict:
    base = {k: v for k, v in os.environ.items() if k not in {"DEBUG", "SECRET_KEY", "DATABASE_URL"}}
    # ENV_FILE empty: a developer's .env must not leak into what the tests set.
    return {**base, "DEBUG": "true", "ENV_FILE": "", **env}


def manage(*args, timeout: float = 120, **env) -> subprocess.CompletedProcess:
    """manage.py with ``env``; the caller sets DATABASE_URL when it must reach the test database."""
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment(**env),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def start_manage(*args, **env) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=environment(**env),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def wait_for(condition, *, timeout: float = 30, interval: float = 0.05, message: str = "condition"):
    """Wait until ``condition()`` is true (a bound on waiting, never a measured time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {message}")
