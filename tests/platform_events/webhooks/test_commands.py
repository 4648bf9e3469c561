"""The webhook commands: add_webhook and rotate_webhook_secret print the secret once; bad input is a
one-sentence CommandError with nothing written."""

import io

import pytest
from django.core.management import CommandError, call_command

from platform_events.audit.models import AuditEvent
from platform_events.outbox.models import EventType
from platform_events.webhooks.endpoints import endpoint_secrets
from platform_events.webhooks.models import WebhookSubscription
from tests.platform_events.webhooks.conftest import URL

pytestmark = pytest.mark.django_db


def run(*args) -> dict[str, str]:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return dict(line.split(": ", 1) for line in out.getvalue().splitlines() if ": " in line)


def test_add_webhook_prints_the_id_and_the_secret_it_signs_with():
    printed = run("add_webhook", URL, "--events", "account.suspended,account.activated", "--owner", "billing")
    endpoint = WebhookSubscription.objects.get(pk=printed["id"])
    assert (endpoint.events, endpoint.owner_id) == (["account.suspended", "account.activated"], "billing")
    assert endpoint_secrets(endpoint) == [printed["secret"]]
    assert AuditEvent.objects.get(resource_id=str(endpoint.pk)).action == "webhook.created"


def test_add_webhook_keeps_a_given_secret():
    given = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
    printed = run("add_webhook", URL, "--events", "account.created", "--secret", given)
    assert printed["secret"] == given


@pytest.mark.parametrize(
    ("args", "sentence"),
    [
        (["http://hooks.example.com/in", "--events", "account.created"], "."),  # addresses.py's own sentence
        ([URL, "--events", ""], "Choose at least one event type."),
        ([URL, "--events", "account.created,account.exploded"], "Unknown event type 'account.exploded'"),
        ([URL, "--events", "account.created", "--secret", "whsec_c2hvcnQ="], "A secret must hold 24 to 64 bytes"),
        ([URL, "--events", "account.created", "--owner", ""], "Name the endpoint's owner"),
    ],
)
def test_add_webhook_refuses_bad_input_and_writes_nothing(settings, args, sentence):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    with pytest.raises(CommandError, match=sentence) as refusal:
        call_command("add_webhook", *args, stdout=io.StringIO())
    assert "\n" not in str(refusal.value)
    assert not WebhookSubscription.objects.exists()


@pytest.mark.parametrize(
    "url", ["http://127.0.0.1:8101/hook", "https://127.0.0.1:8101/hook", "https://localhost/hook", "https://10.0.0.2/"]
)
def test_a_local_receiver_is_refused_with_the_setting_that_allows_it(settings, url):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = False
    with pytest.raises(CommandError, match="allowed only with WEBHOOKS_ALLOW_PRIVATE_URLS=true, for development"):
        call_command("add_webhook", url, stdout=io.StringIO())
    assert not WebhookSubscription.objects.exists()


def test_a_local_receiver_is_added_for_every_event_type_with_the_setting(settings):
    settings.WEBHOOKS_ALLOW_PRIVATE_URLS = True
    printed = run("add_webhook", "http://127.0.0.1:8101/hook")
    assert WebhookSubscription.objects.get(pk=printed["id"]).events == EventType.values


def test_rotate_webhook_secret_prints_the_new_secret_and_the_old_one_still_signs():
    first = run("add_webhook", URL, "--events", "account.created")
    second = run("rotate_webhook_secret", first["id"])
    assert second["id"] == first["id"] and second["secret"] != first["secret"]
    assert endpoint_secrets(WebhookSubscription.objects.get(pk=first["id"])) == [second["secret"], first["secret"]]


# A UUID no endpoint has, written out: every xdist worker must collect the same test ids.
@pytest.mark.parametrize("endpoint_id", ["0b6f5c2e-3d1a-4f8e-9c7b-5a2d1e0f4c3b", "42", "not-an-id"])
def test_rotate_webhook_secret_of_no_endpoint_is_refused(endpoint_id):
    with pytest.raises(CommandError, match="No webhook endpoint has the id"):
        call_command("rotate_webhook_secret", endpoint_id, stdout=io.StringIO())


def test_a_huge_overlap_or_undecodable_text_is_one_sentence():
    """One sentence, not the database's traceback."""
    from django.core.management import CommandError, call_command

    with pytest.raises(CommandError, match="not valid text"):
        call_command("add_webhook", "https://hooks.example.com/\udcff", "--events", "account.created")


def test_add_webhook_takes_deprovisioning_and_reprovisioning():
    printed = run("add_webhook", URL, "--events", "account.deprovisioned,account.reprovisioned")
    endpoint = WebhookSubscription.objects.get(pk=printed["id"])
    assert endpoint.events == ["account.deprovisioned", "account.reprovisioned"]
