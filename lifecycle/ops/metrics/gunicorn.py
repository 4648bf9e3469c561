"""gunicorn's hooks for prometheus_client's multiprocess mode (docs/production.md, "Metrics").

Each worker writes its counts to files in PROMETHEUS_MULTIPROC_DIR, and ``/metrics``, answered by
any one worker, adds up every file there. gunicorn's configuration must call both:

    from lifecycle.ops.metrics import gunicorn as metrics

    def on_starting(server):
        metrics.on_starting(server)

    def child_exit(server, worker):
        metrics.child_exit(server, worker)

The variable must be set in gunicorn's own environment (prometheus_client reads it when imported).
"""

import os
from pathlib import Path

from prometheus_client import multiprocess


def multiprocess_dir() -> Path | None:
    directory = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    return Path(directory) if directory else None


def on_starting(server) -> None:
    """Empty the directory before any worker starts: files left by an earlier server would add their
    counts to this one's, and the dead workers' gauges would never go."""
    directory = multiprocess_dir()
    if directory is None:
        return
    directory.mkdir(parents=True, exist_ok=True)
    # Only prometheus_client's own files (counter_123.db, histogram_123.db, ...): a directory named by
    # mistake (/tmp, a home) loses nothing else.
    for entry in directory.glob("*.db"):
        if entry.is_file() and not entry.is_symlink():
            entry.unlink()


def child_exit(server, worker) -> None:
    """A worker gone (restarted after max_requests, killed, timed out): its live gauges go with it;
    its counters and histograms stay in the sums."""
    if multiprocess_dir() is None:
        return
    multiprocess.mark_process_dead(worker.pid)
