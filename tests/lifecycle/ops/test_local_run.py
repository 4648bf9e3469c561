"""make run (lifecycle/ops/local_run.py): one run per data directory, a stale lock never blocks, Ctrl-C
stops the worker gracefully, letting a running task finish, instead of SIGKILL, and ends make with 0;
the last lines say truly what runs."""

import contextlib
import os
import pty
import re
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest
from django_q.models import Success
from django_q.tasks import async_task

from lifecycle.ops import embedded_db
from lifecycle.ops.local_run import PROCFILE, AlreadyRunning, last_lines, processes_to_run, run_lock
from tests.support import ROOT, database_url_for_tests, environment, wait_for


def local_run(pgdata, *args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "lifecycle.ops.local_run", *args],
        cwd=ROOT,
        env=environment(LIFECYCLE_PGDATA=str(pgdata)),
        capture_output=True,
        text=True,
        timeout=60,
    )


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_a_second_run_is_refused_naming_the_first_and_touches_nothing(tmp_path):
    """While a run holds the data directory, another exits 1 naming its pid and port, before starting
    (or stopping) any database."""
    pgdata = tmp_path / "pgdata"
    with run_lock(pgdata, port=8123):
        second = local_run(pgdata, "--port", str(free_port()))
    assert second.returncode == 1
    assert f"make run (pid {os.getpid()}, http://127.0.0.1:8123/, since " in second.stderr
    assert "this one changed nothing" in second.stderr
    assert not pgdata.exists()


def test_the_lock_is_refused_in_process_too(tmp_path):
    with run_lock(tmp_path / "pgdata", port=8123), pytest.raises(AlreadyRunning, match="pid"):
        with run_lock(tmp_path / "pgdata", port=8124):
            pass


def test_the_refusal_names_where_the_database_really_is(tmp_path):
    """Run as root the data lives under /var/lib/lifecycle, not in the clone's .local/pgdata."""
    pgdata = tmp_path / "pgdata"
    with run_lock(pgdata, port=8123), pytest.raises(AlreadyRunning) as refused:
        with run_lock(pgdata, port=8124):
            pass
    assert f"on the database in {embedded_db.data_directory(pgdata)}." in str(refused.value)


def test_a_run_killed_with_sigkill_does_not_block_the_next(tmp_path):
    """The lock is the kernel's (flock): it goes with its holder, whatever its file still says."""
    pgdata = tmp_path / "pgdata"
    hold = (
        "import pathlib, sys, time\n"
        "from lifecycle.ops.local_run import run_lock\n"
        "with run_lock(pathlib.Path(sys.argv[1]), port=8123):\n"
        "    print('held', flush=True)\n"
        "    time.sleep(60)\n"
    )
    holder = subprocess.Popen(
        [sys.executable, "-c", hold, str(pgdata)], cwd=ROOT, env=environment(), stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().strip() == "held"
    with pytest.raises(AlreadyRunning):
        with run_lock(pgdata, port=8124):
            pass
    holder.kill()
    holder.wait()
    assert f'"pid": {holder.pid}' in (tmp_path / ".pgdata.run").read_text()  # left behind by the killed run
    with run_lock(pgdata, port=8124):
        pass


def test_a_busy_port_is_refused_before_anything_starts(tmp_path):
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        refused = local_run(tmp_path / "pgdata", "--port", str(port))
    assert refused.returncode == 1
    assert f"port {port} is in use" in refused.stderr
    assert not (tmp_path / "pgdata").exists()


@pytest.mark.django_db(transaction=True)
def test_ctrl_c_lets_the_worker_finish_its_task_and_stop_without_sigkill(settings):
    """Ctrl-C during an 8-second task (longer than honcho's own 5 s before SIGKILL): the worker finishes
    the task, django-q2 stops its cluster, and nothing is killed."""
    serve = (
        "import os, sys\n"
        "from lifecycle.ops.local_run import serve\n"
        # Beside the worker, one that stops at once, as the web server does: honcho's wait for the rest starts then.
        "processes = {'worker': 'exec python manage.py qcluster', 'web': 'exec sleep 600'}\n"
        "sys.exit(serve(processes, env=dict(os.environ), grace=40))\n"
    )
    path = f"{os.path.dirname(sys.executable)}{os.pathsep}{os.environ['PATH']}"
    run = subprocess.Popen(
        [sys.executable, "-c", serve],
        cwd=ROOT,
        # The test's SECRET_KEY: django-q2 signs the queued task with it.
        env=environment(
            DATABASE_URL=database_url_for_tests(),
            SECRET_KEY=settings.SECRET_KEY,
            PATH=path,
            Q_TIMEOUT="30",
            Q_RETRY="60",
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # only what the test sends reaches it
    )
    lines = []
    reader = threading.Thread(target=lambda: lines.extend(run.stdout), daemon=True)
    reader.start()
    try:
        wait_for(lambda: any("running." in line for line in lines), timeout=60, message="the cluster to run")
        async_task("time.sleep", 8, task_name="slow-task")
        wait_for(lambda: any("processing slow-task" in line for line in lines), timeout=30, message="the task to start")
        run.send_signal(signal.SIGINT)  # what a terminal's Ctrl-C sends make run's process
        assert run.wait(timeout=60) == 0  # a stop asked for, not a failure
    finally:
        # On a failure, the worker too: honcho started it in a session of its own.
        for group in [run.pid, *(int(pid) for pid in re.findall(r"worker started \(pid=(\d+)\)", "".join(lines)))]:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
    reader.join(timeout=5)
    output = "".join(lines)
    assert "sending SIGINT to worker" in output
    assert "has stopped." in output and "worker stopped (rc=0)" in output
    assert "SIGKILL" not in output
    assert Success.objects.filter(name="slow-task").exists()


def test_make_run_starts_the_development_processes_of_procfile_dev():
    """runserver on the port make run was given, beside the worker and the two listeners; the production
    Procfile (gunicorn) is not make run's."""
    processes = processes_to_run(kafka=False)
    assert PROCFILE.name == "Procfile.dev"
    assert processes["web"] == "exec python manage.py runserver 127.0.0.1:${PORT:-8000}"
    assert set(processes) == {"web", "worker", "mailroom", "webhooks"}


def test_make_run_starts_the_kafka_relay_only_when_a_broker_is_configured():
    """Unset, the relay would only wait; set, it publishes beside the others."""
    assert processes_to_run(kafka=True)["kafka"] == "exec python manage.py publish_events"
    assert "kafka" not in processes_to_run(kafka=False)


def test_the_last_lines_name_every_process_it_runs_and_link_the_admin_and_the_inbox():
    processes = list(processes_to_run(kafka=False))
    assert last_lines(8001, processes=processes, inbox=True, embedded=True) == [
        "Admin: http://127.0.0.1:8001/admin/",
        "E-mails (development inbox): http://127.0.0.1:8001/dev/mail/",
        "Ctrl-C stops web, worker, mailroom and webhooks, then the embedded PostgreSQL.",
    ]


def test_without_the_inbox_or_the_embedded_server_the_last_lines_say_neither():
    """EMAIL_URL set: no inbox to link; DATABASE_URL set: Ctrl-C leaves that server alone."""
    assert last_lines(8000, processes=["web", "worker"], inbox=False, embedded=False) == [
        "Admin: http://127.0.0.1:8000/admin/",
        "Ctrl-C stops web and worker.",
    ]


def test_ctrl_c_in_a_terminal_ends_make_with_0_and_no_make_error(tmp_path):
    """A terminal's Ctrl-C reaches its foreground process group: make too, unless the run takes the
    terminal for itself. make's own recipe, in a real pseudo-terminal, stopped by the character ^C."""
    run = (
        "import os, sys\n"
        "from lifecycle.ops.local_run import serve, terminal_foreground\n"
        "with terminal_foreground():\n"
        "    sys.exit(serve({'web': 'exec sleep 600'}, env=dict(os.environ), grace=5))\n"
    )
    (tmp_path / "run.py").write_text(run)
    (tmp_path / "Makefile").write_text(f"run:\n\t@{sys.executable} {tmp_path / 'run.py'}\n")
    pid, terminal = pty.fork()
    if pid == 0:  # the child: a shell's job, as a person types make run
        os.chdir(ROOT)
        os.execvpe("make", ["make", "-s", "-f", str(tmp_path / "Makefile"), "run"], environment())
    output = b""
    deadline = time.monotonic() + 30
    while b"web started" not in output and time.monotonic() < deadline:
        output += os.read(terminal, 4096)
    assert b"web started" in output, output
    os.write(terminal, b"\x03")  # Ctrl-C, as typed: the terminal turns it into SIGINT for its foreground group
    while True:
        try:
            chunk = os.read(terminal, 4096)
        except OSError:  # the terminal closed: make has ended
            break
        if not chunk:
            break
        output += chunk
    _, status = os.waitpid(pid, 0)
    text = output.decode(errors="replace")
    assert os.waitstatus_to_exitcode(status) == 0, text
    assert "make: ***" not in text
    assert "sending SIGINT to web" in text
