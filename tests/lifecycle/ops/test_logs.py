"""Logs (lifecycle/ops/logs.py, lifecycle/ops/request_log.py): one JSON object per line with the request id the
audit trail records, the same id in the work a page queued, and never the secret of an e-mail's link."""

import base64
import io
import json
import logging
import threading
import uuid

import httpx
import pytest
from django.test import Client
from django.urls import reverse

from lifecycle.demo.factories import AccountFactory
from lifecycle.ops.logs import Brief, JsonLines, PlainLines
from platform_events.audit.models import AuditEvent
from platform_events.request_id import RequestIdFilter
from tests.support import run_queued_tasks
from tokens.links import landing_path, secret_to_text
from tokens.selectors import live_token

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple 7"
NEW_PASSWORD = {"password": PASSWORD, "password_again": PASSWORD}
A_SECRET = secret_to_text(bytes(range(32)))


class Captured:
    """What a real handler, formatted as LOG_FORMAT=json formats it, wrote."""

    def __init__(self):
        self.stream = io.StringIO()

    @property
    def text(self) -> str:
        return self.stream.getvalue()

    @property
    def lines(self) -> list[dict]:
        return [json.loads(line) for line in self.text.splitlines()]

    def requests(self) -> list[dict]:
        return [line for line in self.lines if line["logger"] == "lifecycle.requests"]


@pytest.fixture
def json_log():
    captured = Captured()
    handler = logging.StreamHandler(captured.stream)
    handler.setFormatter(JsonLines())
    handler.addFilter(RequestIdFilter())
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    yield captured
    root.removeHandler(handler)
    root.setLevel(level)


def test_a_request_log_line_and_the_audit_rows_it_wrote_share_the_request_id(json_log):
    token = live_token(account=AccountFactory())
    response = Client().post(landing_path(token), NEW_PASSWORD)
    assert "Your account is active" in response.content.decode()
    [line] = json_log.requests()
    assert line["message"] == f"POST /activate/<str:secret> 200 in {line['message'].split(' in ')[1]}"
    events = AuditEvent.objects.filter(action__in=["account.activated", "token.consumed"])
    assert len(events) == 2
    assert {str(event.request_id) for event in events} == {line["request_id"]} == {response["X-Request-ID"]}


def test_a_json_line_has_the_time_level_logger_message_and_request_id(json_log):
    Client().get("/signup/")
    [line] = json_log.lines
    assert list(line) == ["time", "level", "logger", "message", "request_id"]
    assert (line["level"], line["logger"]) == ("INFO", "lifecycle.requests")
    assert line["time"].endswith("+00:00")
    assert uuid.UUID(line["request_id"])


@pytest.mark.parametrize("name", ["django.request", "django.db.backends", "django-q", "tokens.tasks"])
def test_every_logger_writes_json_lines(json_log, name):
    """Django's, django-q2's and ours: no logger keeps a handler of its own."""
    import django_q.conf  # noqa: F401 - django-q2 adds a handler of its own to a logger that has none

    logging.getLogger(name).warning("a line")
    [line] = json_log.lines
    assert (line["logger"], line["message"]) == (name, "a line")


def test_a_404_is_one_line(json_log):
    """A page nobody has (a probe, an icon a client guesses at) is the request's line alone: Django's
    "Not Found" would say it again."""
    assert Client().get("/nowhere/at-all").status_code == 404
    [line] = json_log.lines
    assert (line["logger"], line["level"]) == ("lifecycle.requests", "INFO")
    assert line["message"].startswith("GET /nowhere/at-all 404 in ")


def test_another_client_error_keeps_djangos_line(json_log):
    """Only the 404's line is dropped: a refused method is still Django's warning too."""
    assert Client().put("/signup/").status_code == 405
    assert [line["logger"] for line in json_log.lines] == ["django.request", "lifecycle.requests"]


def test_a_line_outside_a_request_has_no_request_id(json_log):
    logging.getLogger("tokens.tasks").warning("nothing to do with a request")
    [line] = json_log.lines
    assert "request_id" not in line and line["message"] == "nothing to do with a request"


def test_an_exception_is_one_json_line(json_log):
    try:
        raise ValueError("boom")
    except ValueError:
        logging.getLogger("tokens.tasks").exception("failed")
    [line] = json_log.lines
    assert line["message"] == "failed" and "ValueError: boom" in line["exception"]


def test_each_request_gets_its_own_id(json_log):
    client = Client()
    ids = {client.get("/signup/")["X-Request-ID"] for _ in range(3)}
    assert len(ids) == 3
    assert {line["request_id"] for line in json_log.requests()} == ids


class TestWorkQueuedByAPage:
    def test_its_audit_rows_carry_the_page_request_id(self, json_log):
        response = Client().post(reverse("sign-up"), {"email": "jane@example.com", "login": "jane"} | NEW_PASSWORD)
        assert run_queued_tasks() == 1
        created = AuditEvent.objects.get(action="account.created")
        assert str(created.request_id) == response["X-Request-ID"] == json_log.requests()[0]["request_id"]

    def test_its_log_lines_carry_the_page_request_id(self, json_log):
        """The worker runs the task long after the page answered, and logs under the page's id."""
        response = Client().post(reverse("sign-up"), {"email": "jane@example.com", "login": "jane"} | NEW_PASSWORD)
        AccountFactory(login="jane")  # taken meanwhile: the task logs that it made nothing
        assert run_queued_tasks() == 1
        [line] = [line for line in json_log.lines if line["logger"] == "tokens.tasks"]
        assert line["message"] == "public sign-up not made: login-taken"
        assert line["request_id"] == response["X-Request-ID"]


class TestAClientsRequestId:
    def test_is_ignored(self, json_log):
        """Anybody can write X-Request-ID: it would let a client choose the id of its audit rows."""
        chosen = str(uuid.uuid4())
        response = Client().get("/signup/", HTTP_X_REQUEST_ID=chosen)
        assert response["X-Request-ID"] != chosen
        assert json_log.requests()[0]["request_id"] == response["X-Request-ID"]

    def test_is_taken_from_the_header_the_proxy_sets(self, settings, json_log):
        settings.REQUEST_ID_HEADER = "X-Request-ID"
        token = live_token(account=AccountFactory())
        nginx_id = uuid.uuid4().hex  # nginx's $request_id: 32 hex digits
        response = Client().post(landing_path(token), NEW_PASSWORD, HTTP_X_REQUEST_ID=nginx_id)
        assert response["X-Request-ID"] == str(uuid.UUID(nginx_id))
        assert json_log.requests()[0]["request_id"] == str(uuid.UUID(nginx_id))
        assert {e.request_id for e in AuditEvent.objects.filter(action="token.consumed")} == {uuid.UUID(nginx_id)}

    @pytest.mark.parametrize("value", ["", "not-a-uuid", "1; DROP TABLE", "x" * 5000])
    def test_from_the_proxy_is_replaced_when_it_is_not_a_uuid(self, settings, value):
        """The audit trail's request_id is a uuid: anything else would fail the request's writes."""
        settings.REQUEST_ID_HEADER = "X-Request-ID"
        response = Client().get("/signup/", HTTP_X_REQUEST_ID=value)
        assert uuid.UUID(response["X-Request-ID"]) and response["X-Request-ID"] != value


class TestALinkSecret:
    """/activate/<secret> and /recover/<secret> open an account to whoever holds the link."""

    @pytest.mark.parametrize("page", ["activate-link", "recover-link"])
    def test_is_not_in_the_request_line(self, page, json_log):
        path = reverse(page, args=[A_SECRET])
        Client().get(path)
        assert A_SECRET not in json_log.text
        assert json_log.requests()[0]["message"].startswith(f"GET /{page.split('-')[0]}/<str:secret> ")

    def test_is_hidden_in_djangos_own_lines(self, json_log):
        """A refused CSRF check, and an answer of 4xx, are logged by Django with the path."""
        Client(enforce_csrf_checks=True).post(reverse("recover-link", args=[A_SECRET]), NEW_PASSWORD)
        django_lines = [line for line in json_log.lines if line["logger"].startswith("django.")]
        assert django_lines and all(A_SECRET not in line["message"] for line in django_lines)
        assert "/recover/(hidden)" in django_lines[0]["message"]
        assert A_SECRET not in json_log.text

    def test_is_hidden_in_a_path_no_page_matches(self, json_log):
        response = Client().get(f"/activate/{A_SECRET}/more")
        assert response.status_code == 404
        assert A_SECRET not in json_log.text
        assert "/activate/(hidden)/more" in json_log.text

    @pytest.mark.parametrize(
        "path",
        ["/activate//{}", "/ACTIVATE/{}", "/recover//{}", "/activate/./{}", "/resend/{}", "/x{}y", "/activate/{}junk"],
    )
    def test_is_hidden_in_a_mangled_link_too(self, path, json_log):
        """A proxy that doubles a slash, a mail client that changes the case: the request line and
        Django's Not Found would log each of these in full."""
        response = Client().get(path.format(A_SECRET))
        assert response.status_code == 404
        assert A_SECRET not in json_log.text
        assert A_SECRET[:20] not in json_log.text

    @pytest.mark.parametrize("formatter", [PlainLines(), JsonLines()], ids=["plain", "json"])
    def test_is_hidden_by_both_formats_and_the_code_page_is_left_alone(self, formatter):
        record = logging.makeLogRecord(
            {"msg": "Forbidden: %s and %s", "args": (f"/recover/{A_SECRET}", "/recover/code/"), "levelname": "WARNING"}
        )
        text = formatter.format(record)
        assert A_SECRET not in text
        assert "/recover/(hidden) and /recover/code/" in text


def test_the_plain_format_carries_the_request_id():
    record = logging.makeLogRecord({"msg": "hello", "levelname": "INFO", "name": "tokens.tasks"})
    assert " INFO tokens.tasks -: hello" in PlainLines().format(record)
    record.request_id = "3f2a"
    assert " INFO tokens.tasks 3f2a: hello" in PlainLines().format(record)


@pytest.mark.django_db(transaction=True)
def test_runserver_prints_json_lines_without_the_secret(server):
    """What a developer's terminal shows: runserver's own request line goes through LOG_FORMAT too; a
    404 is one line, the request's."""
    running = server(LOG_FORMAT="json")
    # runserver logs its request line once the answer is sent: read up to it before stopping the server.
    before = []

    def read_up_to_the_request_line():
        for line in running.process.stdout:
            before.append(line)
            if line.startswith("{") and json.loads(line)["logger"] == "django.server" and "/recover/" in line:
                return

    reader = threading.Thread(target=read_up_to_the_request_line)
    reader.start()
    assert httpx.get(f"{running.url}/activate/{A_SECRET}").status_code == 404
    assert httpx.put(f"{running.url}/recover/{A_SECRET}").status_code == 403  # no CSRF token
    reader.join(timeout=30)
    running.process.terminate()
    reader.join(timeout=30)
    output = "".join(before) + running.process.communicate(timeout=30)[0]
    assert A_SECRET not in output
    lines = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    not_found = [line for line in lines if "/activate/" in line["message"]]
    assert [line["logger"] for line in not_found] == ["lifecycle.requests"]
    by_logger = {line["logger"]: line for line in lines if "/recover/" in line["message"]}
    assert {"lifecycle.requests", "django.server"} <= set(by_logger)
    assert (
        by_logger["django.server"]["message"]
        == '"PUT /recover/(hidden) HTTP/1.1" 403 ' + by_logger["django.server"]["message"].rsplit(" ", 1)[1]
    )
    assert by_logger["lifecycle.requests"]["request_id"] == by_logger["django.server"]["request_id"]


def test_a_host_not_allowed_is_one_short_line_without_a_traceback(json_log):
    """Any scanner chooses the Host: with the traceback, an 8,000-byte one makes a 33,000-character ERROR."""
    response = Client().get("/recover/", HTTP_HOST="evil" + "x" * 8000 + ".example")
    assert response.status_code == 400
    [line] = [line for line in json_log.lines if line["logger"] == "django.security.DisallowedHost"]
    assert len(line["message"]) < 400 and "exception" not in line
    assert line["level"] == "WARNING"


def test_the_cut_of_a_long_host_leaves_no_part_of_a_secret():
    """Hidden before the cut: a secret-shaped run across the 300th character would leave up to 42 of it."""
    record = logging.makeLogRecord({"msg": "Invalid HTTP_HOST header: '%s'", "args": ("h" * 280 + "S" * 43,)})
    Brief().filter(record)
    assert "S" * 10 not in record.getMessage()


def test_django_q2_process_names_and_request_ids_are_not_taken_for_secrets():
    """Only a run as long as a link's secret (43) is hidden: django-q2 names its processes
    Process-<32 hex digits>, 40 characters, which would make every line of the worker "(hidden)
    processing ..."."""
    name, request_id = "Process-09966500566f4ca8a9a0450271cfb037", "8d1f0c7e-4a51-4c55-9a3b-2f6d7c1e5b90"
    record = logging.makeLogRecord({"msg": f"{name} processing {request_id}", "levelname": "INFO"})
    assert f"{name} processing {request_id}" in PlainLines().format(record)


@pytest.mark.parametrize("formatter", [PlainLines, JsonLines])
def test_a_webhook_signing_secret_is_hidden_by_both_formats(formatter):
    """whsec_ and standard base64: its + / = break the URL-safe run the link secrets are found by."""
    secret = "whsec_" + base64.b64encode(bytes(range(200, 232))).decode()
    assert "+" in secret and "/" in secret  # no run of 43 URL-safe characters: the shape that slipped through
    record = logging.makeLogRecord({"msg": "endpoint 7 secret %s set", "args": (secret,), "levelname": "INFO"})
    text = formatter().format(record)
    assert secret[6:] not in text and secret[6:16] not in text
    assert "whsec_(hidden)" in text
