"""The events list's helpers (platform_events/outbox/admin.py): what of an event's payload a user sees."""

from platform_events.outbox.admin import HIDDEN, shown_payload

CREATED = {
    "type": "account.created",
    "timestamp": "2026-11-26T10:00:00Z",
    "data": {"id": 7, "login": "kim", "email": "kim@example.com", "status": "provisioned"},
}
MOVED = {
    "type": "account.email_changed",
    "timestamp": "2026-11-26T10:00:00Z",
    "data": {
        "id": 7,
        "login": "kim",
        "email": "new@example.com",
        "previous_email": "old@example.com",
        "status": "active",
    },
}
TEST_EVENT = {"type": "webhook.test", "timestamp": "2026-11-26T10:00:00Z", "data": {"endpoint": "e1"}}


def test_whoever_may_read_accounts_sees_the_payload_whole():
    assert shown_payload(MOVED, True) is MOVED


def test_the_others_see_the_id_and_status_with_every_login_and_address_hidden():
    assert shown_payload(CREATED, False) == {
        **CREATED,
        "data": {"id": 7, "login": HIDDEN, "email": HIDDEN, "status": "provisioned"},
    }
    assert shown_payload(MOVED, False)["data"] == {
        "id": 7,
        "login": HIDDEN,
        "email": HIDDEN,
        "previous_email": HIDDEN,
        "status": "active",
    }
    assert MOVED["data"]["email"] == "new@example.com"  # the event itself is untouched


def test_a_payload_about_no_person_is_shown_as_it_is():
    assert shown_payload(TEST_EVENT, False) is TEST_EVENT
