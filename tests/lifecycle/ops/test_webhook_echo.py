"""python -m lifecycle.ops.webhook_echo: a receiver on 127.0.0.1 that prints each delivery and answers 204."""

import ipaddress
import re
import signal
import subprocess
import sys
import urllib.request

import pytest

from accounts.services import account_provision
from platform_events.webhooks.dispatch import deliver
from platform_events.webhooks.models import DeliveryStatus, WebhookDelivery
from tests.platform_events.webhooks.test_dispatch import make_endpoint
from tests.support import ROOT


@pytest.fixture
def echo():
    """The receiver in its own process on a free port; its URL. Its output is read after it stops."""
    process = subprocess.Popen(
        [sys.executable, "-m", "lifecycle.ops.webhook_echo", "--port", "0"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    first = process.stdout.readline()
    port = re.search(r"http://127\.0\.0\.1:(\d+)/", first).group(1)
    process.url = f"http://127.0.0.1:{port}/hook"
    yield process
    if process.poll() is None:
        process.kill()
        process.wait(timeout=10)


def stop(process) -> tuple[int, str]:
    process.send_signal(signal.SIGTERM)
    output = process.communicate(timeout=10)[0]
    return process.returncode, output


def test_it_prints_the_method_path_webhook_headers_and_body_and_answers_204(echo):
    request = urllib.request.Request(
        echo.url,
        data=b'{"type": "account.created"}',
        headers={"webhook-id": "msg_2Kq", "webhook-timestamp": "1764151200", "content-type": "application/json"},
        method="POST",
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        assert (response.status, response.read()) == (204, b"")
    returncode, output = stop(echo)
    assert returncode == 0 and "Traceback" not in output
    assert re.search(r"\d\d:\d\d:\d\d POST /hook webhook-id: msg_2Kq webhook-timestamp: 1764151200\n", output)
    assert '  {"type": "account.created"}\n' in output
    assert output.rstrip().endswith("Stopped.")


def listening_addresses(port: int) -> set[str]:
    """The IPv4 and IPv6 addresses a socket listens on at ``port`` (Linux: /proc/net/tcp*)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in open(table).read().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, hex_port = local.split(":")
            if state == "0A" and int(hex_port, 16) == port:  # 0A: LISTEN
                found.add(str(ipaddress.ip_address(bytes.fromhex(address)[::-1])) if len(address) == 8 else address)
    return found


def test_it_listens_on_loopback_only(echo):
    port = int(echo.url.split(":")[2].split("/")[0])
    assert listening_addresses(port) == {"127.0.0.1"}


def test_a_port_in_use_is_one_sentence(echo):
    port = echo.url.split(":")[2].split("/")[0]
    result = subprocess.run(
        [sys.executable, "-m", "lifecycle.ops.webhook_echo", "--port", port],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 1
    assert result.stderr.strip() == f"Cannot listen on 127.0.0.1:{port}: Address already in use; choose another --port."


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("webhook_settings")
def test_the_dispatcher_delivers_to_it_and_it_shows_the_event(echo):
    """The tour's way: an endpoint to the echo, allowed by WEBHOOKS_ALLOW_PRIVATE_URLS; 204 is delivered."""
    make_endpoint(echo.url)
    account_provision(email="jane@example.com", login="jane", actor=None)
    assert deliver().delivered == 1
    delivery = WebhookDelivery.objects.get()
    assert (delivery.status, delivery.http_status) == (DeliveryStatus.DELIVERED, 204)
    _, output = stop(echo)
    assert f"POST /hook webhook-id: {delivery.event_id} webhook-timestamp: " in output
    assert '"type": "account.created"' in output and '"login": "jane"' in output
