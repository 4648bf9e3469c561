"""Admin lists filter only by their declared filters: no query string reads a credential."""

import pytest
from django.contrib import admin
from django.urls import reverse

from lifecycle.demo.factories import AccountFactory
from platform_events.admin_kit.lookups import DeclaredLookupsOnly
from tests.support import staff_client
from tokens.selectors import live_token

pytestmark = pytest.mark.django_db

# Columns that hold a credential or its hash, whatever the model.
CREDENTIAL_FIELDS = {"secret", "code", "password", "password_hash"}

admin.autodiscover()  # as the URLconf does, before any page is asked for
REGISTERED = sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label)


def changelist(model) -> str:
    return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_changelist")


@pytest.fixture
def token():
    return live_token(account=AccountFactory())


@pytest.mark.parametrize("role", ["Support", "superuser"])
def test_a_token_code_cannot_be_guessed_digit_by_digit(role, token, admin_client):
    """The attack: '?id=8&code__startswith=5' would say "1 token" or "0 tokens"; both answer 400 alike."""
    client = admin_client if role == "superuser" else staff_client(role)
    tokens = changelist(type(token))
    right, wrong = token.code[0], str((int(token.code[0]) + 1) % 10)
    answers = {client.get(f"{tokens}?id={token.pk}&code__startswith={digit}").status_code for digit in (right, wrong)}
    assert answers == {400}


@pytest.mark.parametrize(
    "query", ["secret__regex=^\\\\xa", "secret=x", "code=%00", "failed_attempts__gte=0", "account__email=x"]
)
def test_undeclared_token_lookups_answer_400(admin_client, token, query):
    assert admin_client.get(f"{changelist(type(token))}?{query}").status_code == 400


@pytest.mark.parametrize(("model", "model_admin"), REGISTERED, ids=[model._meta.label for model, _ in REGISTERED])
def test_no_admin_filters_by_an_undeclared_field(admin_client, model, model_admin):
    """Every registered admin (Django's, django-q2's and django-axes' too) refuses '?<field>=' and
    '?<field>__startswith=' for each field that is not one of its declared filters."""
    declared = model_admin.declared_lookups(None)
    fields = [field.name for field in model._meta.concrete_fields]
    refused = {
        query: admin_client.get(f"{changelist(model)}?{query}=1").status_code
        for name in fields
        for query in (name, f"{name}__startswith")
        if query not in declared
    }
    assert set(refused.values()) == {400}, refused


@pytest.mark.parametrize(("model", "model_admin"), REGISTERED, ids=[model._meta.label for model, _ in REGISTERED])
def test_no_admin_lists_sorts_or_searches_a_credential(model, model_admin):
    named = [
        *model_admin.list_display,
        *model_admin.list_filter,
        *model_admin.search_fields,
        *(model_admin.ordering or []),
        *(model_admin.sortable_by or []),
        *(model_admin.date_hierarchy or "",),
    ]
    paths = {str(item[0] if isinstance(item, (list, tuple)) else item).lstrip("=^@-") for item in named}
    assert not {part for path in paths for part in path.split("__")} & CREDENTIAL_FIELDS


@pytest.mark.parametrize(
    ("url", "query"),
    [
        ("admin:accounts_account_changelist", "status__exact=bogus"),
        ("admin:accounts_account_changelist", "created_at__range__gte=yesterday"),
        ("admin:accounts_account_changelist", "created_at__range__lte=2026-02-30"),
        ("admin:tokens_token_changelist", "state=bogus"),
        ("admin:accounts_account_changelist", "status__exact=active%00"),
        ("admin:platform_events_auditevent_changelist", "correlation_id=not-a-uuid"),
        ("admin:platform_events_auditevent_changelist", "resource_id=" + "9" * 65),
        ("admin:platform_events_auditevent_changelist", "actor_ip=x"),
        ("admin:platform_events_auditevent_changelist", "email__regex=("),
        # The date range (django-admin-rangefilter): a value its form refuses, or a part it does not have.
        ("admin:platform_events_auditevent_changelist", "occurred_at__range__gte=yesterday"),
        ("admin:platform_events_auditevent_changelist", "occurred_at__range__lte=2026-02-30"),
        ("admin:platform_events_auditevent_changelist", "occurred_at__range__gte_0=2026-01-01"),
        ("admin:platform_events_auditevent_changelist", "occurred_at__gte=2026-01-01"),
        ("admin:platform_events_auditevent_changelist", "occurred_at__range=2026-01-01"),
        ("admin:platform_events_auditevent_changelist", "account=abc"),
    ],
)
def test_declared_filters_with_values_their_column_cannot_hold_answer_400(admin_client, url, query):
    assert admin_client.get(f"{reverse(url)}?{query}").status_code == 400


@pytest.mark.parametrize(
    ("url", "query"),
    [
        ("admin:accounts_account_changelist", "status__exact=active"),
        ("admin:accounts_account_changelist", "created_at__range__gte=2026-01-01"),
        (
            "admin:accounts_account_changelist",
            "activated_at__range__gte=2026-01-01&activated_at__range__lte=2026-12-31",
        ),
        ("admin:tokens_token_changelist", "state=code_blocked&expires_at__range__lte=2026-01-01"),
        ("admin:accounts_account_changelist", "suspended_at__isnull=True"),
        ("admin:platform_events_auditevent_changelist", "resource_type=account&resource_id=7"),
        ("admin:platform_events_auditevent_changelist", "account=7"),
        # The range filter's own button sends both ends, one often empty.
        ("admin:platform_events_auditevent_changelist", "occurred_at__range__gte=2026-01-01&occurred_at__range__lte="),
        ("admin:platform_events_auditevent_changelist", "occurred_at__range__gte=&occurred_at__range__lte=2026-12-31"),
        ("admin:tokens_token_changelist", "mail_state__exact=dead&action__exact=activation"),
        ("admin:auth_user_changelist", "is_staff__exact=1&groups__id__exact=1"),
    ],
)
def test_declared_filters_still_filter(admin_client, url, query):
    assert admin_client.get(f"{reverse(url)}?{query}").status_code == 200


def test_a_refused_lookup_gets_a_page_that_says_what_went_wrong(admin_client, settings):
    settings.DEBUG = False
    response = admin_client.get(reverse("admin:tokens_token_changelist") + "?code__startswith=1")
    assert response.status_code == 400
    assert "This link does not work" in response.content.decode()


class TestFiltersThatReadTheirOwnParameters:
    """django-admin-rangefilter's filters read ``<field>__range__gte``/``__lte`` (``_0``/``_1`` for a
    date and a time) through a form of their own; a SimpleListFilter reads its ``parameter_name``.
    Each such parameter is allowed with the values its filter takes, and nothing more."""

    @pytest.fixture
    def token_admin(self):
        from django.contrib.admin import ModelAdmin
        from rangefilter.filters import DateRangeFilterBuilder, DateTimeRangeFilterBuilder

        from tokens.models import Token

        filters = [("created_at", DateTimeRangeFilterBuilder()), ("expires_at", DateRangeFilterBuilder())]
        model_admin = type("RangedTokenAdmin", (DeclaredLookupsOnly, ModelAdmin), {"list_filter": filters})
        return model_admin(Token, admin.site)

    def test_the_range_parameters_are_declared_and_nothing_else(self, token_admin):
        assert token_admin.declared_lookups(None) == {
            "created_at__range__gte_0",
            "created_at__range__gte_1",
            "created_at__range__lte_0",
            "created_at__range__lte_1",
            "expires_at__range__gte",
            "expires_at__range__lte",
        }

    @pytest.mark.parametrize(
        ("lookup", "value", "allowed"),
        [
            ("expires_at__range__gte", "2026-01-31", True),
            ("expires_at__range__gte", "2026-01-32", False),
            ("expires_at__range__gte", "", True),  # an empty box: no bound
            ("expires_at__range__lte", "9999-12-31", False),  # its last moment leaves the calendar in some zones
            ("expires_at__range__gte", "2026-01-01\x00", False),
            ("created_at__range__gte_0", "2026-01-31", True),
            ("created_at__range__gte_1", "23:59:59", True),
            ("created_at__range__gte_1", "25:00", False),
            ("created_at__range__gte_2", "2026-01-31", False),
            ("created_at__range__gte", "2026-01-31", False),  # the date-and-time filter reads _0 and _1
            ("created_at__gte", "2026-01-31", False),
            ("code__range__gte", "00000", False),
            ("secret__range__gte_0", "2026-01-31", False),
        ],
    )
    def test_values_are_what_the_filters_form_accepts(self, token_admin, lookup, value, allowed):
        assert token_admin.lookup_allowed(lookup, value, None) is allowed

    def test_a_simple_list_filter_takes_only_its_choices(self):
        from tokens.models import Token, TokenState

        token_admin = admin.site._registry[Token]
        assert all(token_admin.lookup_allowed("state", state.value, None) for state in TokenState)
        assert not token_admin.lookup_allowed("state", "bogus", None)
        assert not token_admin.lookup_allowed("state__in", "valid", None)
