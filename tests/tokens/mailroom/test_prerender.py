"""A template rendered once per batch for what its e-mails share writes, for each e-mail, what Django
writes rendering it whole: the same text, whatever the values, the time zone and the language."""

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest
from django.template import engines
from django.template.loader import get_template
from django.utils import timezone, translation

from tokens.mailroom.prerender import Prerendered, Whole, active_locale, prerendered
from tokens.models import TokenAction

SHARED = {
    "site_name": "Example <Org> & Co",
    "site_logo_url": "https://cdn.example.org/logo.png?a=1&b=2",
    "site_accent": "#7a1f5c",
    "erasure_delay": "30 days",
    "ask_again_link": "https://accounts.example.org/resend/",
}
EXPIRY = datetime(2026, 11, 27, 23, 40, 5, tzinfo=UTC)
OWN = [
    {
        "login": "jane",
        "deprovisioned_at": None,
        "erased_on": None,
        "closed_by_request": False,
        "link": "https://accounts.example.org/activate/" + "x" * 43,
        "code": "01234",
        "expires_at": EXPIRY,
        "issued_at": EXPIRY - timedelta(minutes=15),
        "valid_for": "about 15 minutes",
        "address": None,
        "account_address": "jane@example.com",
    },
    {
        "login": '<b>o\'hara</b> & "sons"',
        "deprovisioned_at": EXPIRY - timedelta(days=3),
        "erased_on": EXPIRY + timedelta(days=27),
        "closed_by_request": True,
        "link": None,
        "code": None,
        "expires_at": EXPIRY + timedelta(hours=1, minutes=7),
        "issued_at": EXPIRY - timedelta(days=400),
        "valid_for": "less than a minute",
        "address": "o'hara+<new>@example.com",
        "account_address": "o.hara@example.com",
    },
]
ZONES = [ZoneInfo("UTC"), ZoneInfo("Asia/Kolkata"), ZoneInfo("America/New_York")]


def whole(template, own: dict) -> str:
    return template.render({**SHARED, **own})


@pytest.mark.parametrize("action", list(TokenAction))
@pytest.mark.parametrize("suffix", [".subject.txt", ".txt", ".html"])
def test_every_e_mail_template_writes_what_django_writes(action, suffix):
    """Each e-mail of a batch, in each time zone and language, gets Django's own text for it."""
    template = get_template(f"emails/{action}{suffix}")
    batch = prerendered(template, shared=SHARED, own=set(OWN[0]))
    for zone in ZONES:
        for language in ("en-us", "fr"):
            with timezone.override(zone), translation.override(language):
                for own in [*OWN, *OWN]:  # the second time from what the batch kept
                    assert batch.render(own, locale=active_locale()) == whole(template, own)


@pytest.mark.parametrize("action", [action for action in TokenAction if action != TokenAction.RESTORE])
def test_the_e_mail_templates_without_tags_on_an_e_mails_own_values_are_rendered_in_pieces(action):
    """Only the restore e-mail, whose text depends on {% if %} over the account, is rendered whole."""
    for suffix in (".subject.txt", ".txt", ".html"):
        template = get_template(f"emails/{action}{suffix}")
        assert isinstance(prerendered(template, shared=SHARED, own=set(OWN[0])), Prerendered)


def from_string(text: str):
    return engines["django"].from_string(text)


def test_tokens_of_one_batch_each_get_their_own_expiry_in_the_active_time_zone():
    """The times a batch keeps are kept per value, time zone and language: a time zone or language
    activated between two e-mails of one batch, or another expiry, gets its own text."""
    template = from_string('until {{ expires_at|date:"H:i T" }} on {{ expires_at|date:"Y-m-d F" }}')
    batch = prerendered(template, shared=SHARED, own={"expires_at"})
    later = EXPIRY + timedelta(minutes=1)
    written = []
    for zone, language, expires_at in [
        (ZONES[0], "en-us", EXPIRY),
        (ZONES[1], "en-us", EXPIRY),
        (ZONES[1], "fr", EXPIRY),
        (ZONES[2], "fr", EXPIRY),
        (ZONES[2], "fr", later),
        (ZONES[0], "en-us", later),
        (ZONES[0], "en-us", EXPIRY),
    ]:
        with timezone.override(zone), translation.override(language):
            written.append(batch.render({"expires_at": expires_at}, locale=active_locale()))
            assert written[-1] == whole(template, {"expires_at": expires_at})
    assert written == [
        "until 23:40 UTC on 2026-11-27 November",
        "until 05:10 IST on 2026-11-28 November",
        "until 05:10 IST on 2026-11-28 novembre",
        "until 18:40 EST on 2026-11-27 novembre",
        "until 18:41 EST on 2026-11-27 novembre",
        "until 23:41 UTC on 2026-11-27 November",
        "until 23:40 UTC on 2026-11-27 November",
    ]


@pytest.mark.parametrize(
    "text",
    [
        "{% if login %}Hello {{ login }}{% endif %}",  # a tag over an e-mail's own value
        "{% for letter in site_name %}{{ letter }}{% endfor %}",
        "{% extends base %}",  # the template to extend named by a variable
        "{{ undefined_name }} {{ login }}",  # Django writes it empty; rendering it whole keeps that
    ],
)
def test_a_template_with_other_tags_is_rendered_whole_by_django(text):
    template = from_string(text)
    batch = prerendered(template, shared={**SHARED, "base": from_string("x")}, own={"login"})
    assert isinstance(batch, Whole)
    assert batch.render({"login": "<jane>"}) == whole(template, {"login": "<jane>", "base": from_string("x")})


def test_filters_reading_both_shared_and_own_values_are_rendered_for_each_e_mail():
    """A variable with an e-mail's own value anywhere in it (as its argument too) is that e-mail's."""
    template = from_string(
        "{% load static %}{# a comment #}{% comment %}gone{% endcomment %}{{ site_name|default:login }}"
        " {{ code|default:site_name }} {{ site_name|cut:code }} {{ site_accent|upper }} {{ login|safe }}"
    )
    batch = prerendered(template, shared=SHARED, own={"login", "code"})
    assert isinstance(batch, Prerendered)
    for own in [{"login": "<a>", "code": "<"}, {"login": "b&", "code": "Co"}, {"login": "", "code": ""}]:
        assert batch.render(own) == whole(template, own)


def test_blocks_are_taken_from_the_most_derived_template_as_django_takes_them():
    base = get_template("emails/base.html")
    template = from_string(
        '{% extends "emails/base.html" %}ignored {{ login }}{% block body %}<p>{{ login }}</p>{% endblock %}'
    )
    batch = prerendered(template, shared=SHARED, own={"login"})
    assert isinstance(batch, Prerendered)
    assert batch.render({"login": "<jane>"}) == whole(template, {"login": "<jane>"})
    assert "<p>&lt;jane&gt;</p>" in batch.render({"login": "<jane>"})
    assert prerendered(base, shared=SHARED, own=set()).render({}) == whole(base, {})


def test_numbers_and_quoted_text_read_no_name_and_are_written_as_django_writes_them():
    """A literal is a Variable without lookups: as a value or a filter's argument it reads no name."""
    template = from_string('{{ 5 }} {{ "x&y" }} {{ login|truncatechars:3 }} {{ expires_at|date:"Y" }}')
    batch = prerendered(template, shared=SHARED, own={"login", "expires_at"})
    assert isinstance(batch, Prerendered)
    for own in OWN:
        values = {"login": own["login"], "expires_at": own["expires_at"]}
        assert batch.render(values, locale=active_locale()) == whole(template, values)


@pytest.mark.parametrize("text", ['{{ _("January") }} {{ login }}', '{{ ""|default:_("January") }} {{ login }}'])
def test_a_translated_constant_is_translated_in_each_e_mails_language(text):
    """_("...") is translated as each e-mail is rendered: laid out once, it would keep the first e-mail's
    language for the whole batch."""
    template = from_string(text)
    with translation.override("en"):
        batch = prerendered(template, shared=SHARED, own={"login"})
    with translation.override("fr"):
        assert batch.render({"login": ""}) == whole(template, {"login": ""})
        assert "janvier" in batch.render({"login": ""})
