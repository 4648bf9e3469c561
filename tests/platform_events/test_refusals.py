"""The one refusal base (platform_events/refusals.py): a sentence for a person, fields for a program,
a kind's code and status from its class unless one refusal is given its own."""

from platform_events.refusals import Refused


class LinkExpired(Refused):
    code = "link-expired"
    status = 410


class Taken(Refused):
    code = "name-taken"
    default_reason = "taken meanwhile"


def test_str_is_the_one_sentence_shown_to_a_person():
    assert str(LinkExpired("tokens: this link expired at 12:00")) == "tokens: this link expired at 12:00"


def test_the_code_and_status_are_the_classs():
    refusal = LinkExpired("tokens: this link expired")
    assert (refusal.code, refusal.status) == ("link-expired", 410)


def test_the_base_is_the_generic_refusal_answered_409():
    refusal = Refused("nothing to do")
    assert (refusal.code, refusal.status) == ("refused", 409)


def test_one_refusal_may_have_its_own_code_and_status_without_changing_its_kind():
    gone = LinkExpired("tokens: this link no longer exists", code="link-gone", status=404)
    assert (gone.code, gone.status) == ("link-gone", 404)
    assert (LinkExpired.code, LinkExpired.status) == ("link-expired", 410)
    assert (LinkExpired("tokens: expired").code, LinkExpired("tokens: expired").status) == ("link-expired", 410)


def test_the_fields_say_whose_and_what_and_are_none_when_unknown():
    refusal = Refused("accounts: account 7 is suspended", account_id=7, state="suspended", field="login")
    assert (refusal.account_id, refusal.state, refusal.field, refusal.retry_after) == (7, "suspended", "login", None)
    assert (Refused("x").account_id, Refused("x").state, Refused("x").field) == (None, None, None)


def test_the_reason_is_the_code_in_words_unless_the_kind_says_its_own():
    assert LinkExpired("tokens: expired").reason == "link expired"
    assert Taken("accounts: taken").reason == "taken meanwhile"


def test_one_refusal_may_say_its_own_reason():
    """An endpoint found paused where it should be active groups as "paused, not active", not by its code."""
    assert LinkExpired("tokens: expired", reason="expired an hour ago").reason == "expired an hour ago"
    assert Taken("accounts: taken", reason="taken by bob").reason == "taken by bob"  # over its kind's words
