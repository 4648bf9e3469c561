"""``make run``: set up, then the web server, the worker, and the mail and webhook listeners (``Procfile.dev``;
the production one is ``Procfile``) until Ctrl-C, then the embedded PostgreSQL stopped.

- **One run per data directory.** A second ``make run`` in the same clone (the same
  ``LIFECYCLE_PGDATA``) refuses to start, naming the pid and port of the one running, and touches
  nothing: otherwise it would meet the busy port and exit, and its exit would stop the first run's
  database. The lock is an ``flock`` on ``.local/.pgdata.run``, which the kernel releases when its
  holder dies (and the processes honcho forks from it), so a run killed with SIGKILL never blocks the
  next one; the file only says who holds it.
- **Ctrl-C stops the worker gracefully.** honcho stops a process by sending SIGTERM to its whole
  process group (``killpg``), then SIGKILL 5 s later (``KILL_WAIT``, fixed in honcho 2.0: no option).
  django-q2's sentinel and workers share the qcluster's group and die of that SIGTERM at once (their
  SIGTERM is the default action), and the qcluster then waits forever on a lock the dead sentinel
  held, until the SIGKILL. The group gets SIGINT instead, as from a terminal's Ctrl-C, which
  django-q2 is made for: the qcluster stops the cluster, whose processes ignore SIGINT, and each worker
  finishes its task. honcho waits up to the worker's grace period, ``Q_TIMEOUT`` + 10 s, before SIGKILL.
- **Ctrl-C is a clean stop, exit status 0.** A terminal's Ctrl-C reaches its whole foreground process
  group, ``make`` too, which would then report "Interrupt" or "Error 130" however cleanly the run
  stopped. As a job-control shell does for a job, the run takes a process group of its own and makes
  it the terminal's foreground while it lasts, so that the SIGINT reaches the run alone; ``make`` sees
  it end with 0.
- **The logins come last.** Mail due at start-up (the demo's 30 activation e-mails on a first run)
  is sent before the servers start (to the development inbox, ``/dev/mail/``, unless EMAIL_URL is
  set); the staff logins, the admin's and the inbox's addresses and what Ctrl-C stops are printed once
  the web server answers.
"""

import argparse
import fcntl
import io
import json
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from honcho import manager as honcho_manager
from honcho.environ import parse_procfile
from honcho.printer import Message, Printer

from lifecycle.ops import embedded_db

BASE_DIR = Path(__file__).resolve().parents[2]
# What make run starts: runserver and the rest, for development (the production processes: Procfile).
PROCFILE = BASE_DIR / "Procfile.dev"
DEFAULT_PORT = 8000
# Beyond Q_TIMEOUT (a worker's longest task): django-q2's pusher, monitor and sentinel stopping after it.
GRACE_BEYOND_TASK_SECONDS = 10
# How long the logins wait for the web server before they are printed anyway.
WEB_START_SECONDS = 60
# honcho's return code once SIGINT (Ctrl-C) stopped the processes: 128 + SIGINT.
CTRL_C = 128 + signal.SIGINT


class AlreadyRunning(Exception):
    """Another ``make run`` holds this data directory."""


@contextmanager
def run_lock(pgdata: Path, *, port: int) -> Iterator[None]:
    """Hold this data directory's run lock while the block runs, its file saying who (pid, port, since
    when); raise AlreadyRunning, naming them, when another process holds it."""
    path = pgdata.parent / f".{pgdata.name}.run"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.seek(0)
            raise AlreadyRunning(_refusal(lock.read(), pgdata)) from None
        lock.truncate(0)
        json.dump({"pid": os.getpid(), "port": port, "since": datetime.now().strftime("%H:%M:%S")}, lock)
        lock.flush()
        try:
            yield
        finally:
            lock.truncate(0)


def _refusal(holder: str, pgdata: Path) -> str:
    try:
        pid, port, since = (json.loads(holder)[key] for key in ("pid", "port", "since"))
    except (ValueError, KeyError, TypeError):  # taken this instant, not yet written
        who = "another make run"
    else:
        who = f"make run (pid {pid}, http://127.0.0.1:{port}/, since {since})"
        if not _alive(pid):  # killed alone: the processes it started, which share its lock, still run
            who = f"what make run (pid {pid}, killed since) started at {since} (http://127.0.0.1:{port}/)"
    return (
        f"Not started: {who} is running on the database in {embedded_db.data_directory(pgdata)}. Stop it first"
        " (Ctrl-C in its terminal, or kill -INT with its pid); this one changed nothing."
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's
        return True
    return True


def port_in_use(port: int) -> bool:
    with socket.socket() as probe:
        # As runserver binds: a port left in TIME_WAIT by the last run is free.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return True
    return False


class GracefulManager(honcho_manager.Manager):
    """honcho's Manager, stopping each process group with SIGINT where honcho sends SIGTERM (see above),
    and waiting ``grace`` seconds before SIGKILL."""

    def __init__(self, *, grace: int, printer: Printer | None = None):
        super().__init__(printer)
        # honcho reads its module's KILL_WAIT in loop(); a run is the only Manager in its process.
        honcho_manager.KILL_WAIT = grace

    def _killall(self, force=False):
        # honcho's own, but for the signal (and its name in the log).
        signum = signal.SIGKILL if force else signal.SIGINT
        for name, process in self._processes.items():
            if "returncode" in process:
                continue
            self._system_print(f"sending {signum.name} to {name} (pid {process['pid']})\n")
            try:
                os.killpg(process["pid"], signum)
            except (ProcessLookupError, PermissionError):  # gone already
                pass


def serve(processes: dict[str, str], *, env: dict[str, str], grace: int, then=None) -> int:
    """Run ``processes`` ({name: shell command}) together until Ctrl-C or until one stops; their exit
    code. ``then(manager)``, if given, runs in a thread beside them (``say`` prints among their lines)."""
    manager = GracefulManager(grace=grace, printer=Printer(sys.stdout))
    for name, command in processes.items():
        manager.add_process(name, command, env=env, cwd=str(BASE_DIR))
    if then is not None:
        threading.Thread(target=then, args=(manager,), daemon=True).start()
    manager.loop()
    if manager.returncode == CTRL_C:  # the stop asked for, done: not a failure
        return 0
    return manager.returncode or 0


def say(manager, name: str, text: str) -> None:
    """Print ``text`` among the processes' lines, under ``name``."""
    manager.events.put(Message(type="line", data=text, time=datetime.now(), name=name, colour=None))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lifecycle.ops.local_run", description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"the web server's (default {DEFAULT_PORT})")
    port = parser.parse_args(argv).port
    if not 1 <= port <= 65535:
        parser.error(f"--port must be between 1 and 65535, not {port}.")
    pgdata = embedded_db.pgdata_path()
    try:
        with run_lock(pgdata, port=port), terminal_foreground():
            return _run(port, pgdata)
    except AlreadyRunning as refusal:
        print(refusal, file=sys.stderr)
        return 1


@contextmanager
def terminal_foreground() -> Iterator[None]:
    """This process in a process group of its own, the terminal's foreground one while the block runs, so
    that Ctrl-C reaches it and not the ``make`` that started it (see above). Without a terminal, or when
    not in its foreground (started with &), or already leading its group (started by a shell), nothing
    changes."""
    try:
        terminal = os.open("/dev/tty", os.O_RDWR)
    except OSError:  # no controlling terminal: CI, a service
        yield
        return
    try:
        before = os.tcgetpgrp(terminal)
        if before != os.getpgrp() or os.getpgrp() == os.getpid():
            yield
            return
        os.setpgid(0, 0)
        # A background group that sets the terminal's foreground is stopped by SIGTTOU unless it ignores it.
        ttou = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        try:
            os.tcsetpgrp(terminal, os.getpgrp())
            yield
        finally:
            os.tcsetpgrp(terminal, before)
            signal.signal(signal.SIGTTOU, ttou)
    finally:
        os.close(terminal)


def _run(port: int, pgdata: Path) -> int:
    if port_in_use(port):
        print(
            f"Not started: port {port} is in use (by another program, or by the web server of a make run that"
            f" was killed). Stop it, or use another port: make run PORT={port + 1}.",
            file=sys.stderr,
        )
        return 1
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lifecycle.settings")
    embedded = False
    try:
        settings = _django()
        embedded = not os.environ.get("DATABASE_URL")  # .env, read by the settings, may set it
        if settings.PUBLIC_BASE_URL == f"http://127.0.0.1:{DEFAULT_PORT}" and port != DEFAULT_PORT:
            # Left at its default, the e-mails' links follow the port: here (the mail sent at start-up) and
            # in the processes honcho starts.
            settings.PUBLIC_BASE_URL = os.environ["PUBLIC_BASE_URL"] = f"http://127.0.0.1:{port}"
        logins = _set_up(settings, pgdata)
        if embedded:
            logins += "\n" + embedded_db.where(pgdata)
        env = {
            **os.environ,
            "PORT": str(port),
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        }
        processes = processes_to_run(kafka=bool(settings.KAFKA_BOOTSTRAP_SERVERS))

        def print_logins(manager):
            _wait_for_port(port)
            say(manager, "logins", logins)
            for line in last_lines(port, processes=list(processes), inbox=_inbox(settings), embedded=embedded):
                say(manager, "logins", line)

        return serve(
            processes, env=env, grace=settings.Q_CLUSTER["timeout"] + GRACE_BEYOND_TASK_SECONDS, then=print_logins
        )
    except KeyboardInterrupt:  # Ctrl-C while setting up: stopped, as asked
        return 0
    except _SetUpFailed as failure:
        print(failure, file=sys.stderr)
        return 1
    finally:
        if embedded:
            stopped = embedded_db.stop(pgdata)
            where = embedded_db.data_directory(pgdata)
            print(f"embedded PostgreSQL {'stopped' if stopped else 'was not running'}: {where}")


class _SetUpFailed(Exception):
    pass


def _django():
    """Django set up, its settings; a bad setting or an unreachable database as one sentence."""
    import django
    from django.core.exceptions import ImproperlyConfigured

    try:
        django.setup()
        from django.conf import settings

        return settings
    except ImproperlyConfigured as error:
        raise _SetUpFailed(f"Configuration error: {error}") from None


def _set_up(settings, pgdata: Path) -> str:
    """Migrate, load the demo data and send the mail due; what to print last: the logins, and what
    became of that mail."""
    from django.core.management import CommandError, call_command
    from django.db import OperationalError, connections

    from platform_events.db.unreachable import database_unreachable
    from tokens.mailroom.drain import drain

    try:
        call_command("migrate", interactive=False)
        logins = io.StringIO()
        call_command("seed_demo", stdout=logins)
        mailed = drain()
    except CommandError as error:
        raise _SetUpFailed(f"make run: {error}") from None
    except OperationalError as error:
        if not database_unreachable(error):
            raise
        raise _SetUpFailed(f"Database unreachable (DATABASE_URL, or the embedded server): {error}") from None
    finally:
        connections.close_all()  # the processes honcho forks must not share these connections
    lines = [logins.getvalue().rstrip()]
    if mailed.sent:
        where = "to the development inbox (below)" if _inbox(settings) else "through EMAIL_URL"
        lines.insert(0, f"{mailed.sent} e-mails due at start-up were sent {where} before the servers started.")
    if mailed.error:  # an SMTP server down: the listener and the worker retry
        lines.insert(0, f"Not all mail due at start-up was sent ({mailed.error}); the mail listener retries.")
    return "\n".join(lines)


def processes_to_run(*, kafka: bool) -> dict[str, str]:
    """Procfile.dev's processes; the Kafka relay only when a broker is configured."""
    processes = dict(parse_procfile(PROCFILE.read_text()).processes)
    if not kafka:
        del processes["kafka"]
    return processes


def last_lines(port: int, *, processes: list[str], inbox: bool, embedded: bool) -> list[str]:
    """What make run prints once the web server answers, after the logins: where to go, and what Ctrl-C stops."""
    lines = [f"Admin: http://127.0.0.1:{port}/admin/"]
    if inbox:
        lines.append(f"E-mails (development inbox): http://127.0.0.1:{port}/dev/mail/")
    stopped = f"{', '.join(processes[:-1])} and {processes[-1]}" if len(processes) > 1 else processes[0]
    lines.append(f"Ctrl-C stops {stopped}{', then the embedded PostgreSQL' if embedded else ''}.")
    return lines


def _inbox(settings) -> bool:
    """E-mails are kept for the development inbox (DEBUG on, EMAIL_URL unset)."""
    from lifecycle.dev_inbox.backend import INBOX_BACKEND

    return settings.EMAIL_BACKEND == INBOX_BACKEND


def _wait_for_port(port: int) -> None:
    deadline = time.monotonic() + WEB_START_SECONDS
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)


if __name__ == "__main__":
    sys.exit(main())
