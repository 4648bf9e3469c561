"""A list's rows written by the admin kit (platform_events/admin_kit/rows.py): Django's own HTML."""

import pytest
from django.contrib.admin.templatetags.admin_list import result_list
from django.urls import reverse

from lifecycle.demo.factories import AccountFactory
from platform_events.admin_kit.rows import quick_result_list
from tests.support import tokens_in_every_state
from tokens.models import MailState, Token

pytestmark = pytest.mark.django_db


def djangos_rows(changelist) -> list[str]:
    return ["".join(row) for row in result_list(changelist)["results"]]


def quick_rows(changelist) -> list[str]:
    return ["".join(row) for row in quick_result_list(changelist)["results"]]


def assert_rows_are_djangos(response):
    """The page's rows are the admin kit's, and each is the row Django's result_list writes."""
    assert response.status_code == 200, response
    changelist = response.context["cl"]
    expected = djangos_rows(changelist)
    assert expected and quick_rows(changelist) == expected
    page = response.content.decode()
    assert all(f"<tr>{row}</tr>" in page for row in expected)
    assert quick_result_list(changelist)["result_headers"] == result_list(changelist)["result_headers"]


@pytest.mark.parametrize("query", [{}, {"state": "valid"}, {"q": "jane"}, {"o": "-2"}])
def test_the_token_lists_rows_are_djangos(admin_client, query):
    """Every column of the token list (link, checkbox, choices, the account, the state, the mail state with
    its error, times), also filtered, searched or sorted (the row's link carries the list's filters)."""
    tokens_in_every_state()
    AccountFactory(login="jane", email="jane@example.com")
    Token.objects.filter(pk=Token.objects.order_by("id").first().pk).update(
        mail_state=MailState.DEAD, mail_attempts=3, mail_error='550 <b>"no"</b> & gone'
    )
    assert_rows_are_djangos(admin_client.get(reverse("admin:tokens_token_changelist"), query))


@pytest.mark.parametrize("query", [{}, {"status__exact": "active"}, {"q": "jane"}])
def test_the_account_lists_rows_are_djangos(admin_client, query):
    """Badges, the status's time, an address that needs escaping."""
    AccountFactory(active=True, login="jane", email="o'jane&co@example.com")
    AccountFactory(suspended=True, login="janet")
    AccountFactory(login="joe")
    assert_rows_are_djangos(admin_client.get(reverse("admin:accounts_account_changelist"), query))


@pytest.mark.parametrize("query", [{}, {"action__exact": "account.created"}])
def test_a_list_of_other_columns_is_djangos(admin_client, query):
    """The kit's rows of a list of other columns are Django's: the audit trail's rows (methods with HTML,
    foreign keys, empty values, links with the row's time and the list's filters), compared with Django's
    result_list."""
    AccountFactory(suspended=True)
    response = admin_client.get(reverse("admin:platform_events_auditevent_changelist"), query)
    changelist = response.context["cl"]
    assert quick_rows(changelist) == djangos_rows(changelist)


def test_a_stock_admins_columns_are_djangos(rf, admin_user):
    """Columns the product's lists do not have yet: a foreign key, a date field, a lambda returning a date,
    a boolean method, an empty value, a model method."""
    from django.contrib import admin

    AccountFactory(login="jane")
    Token.objects.update(mail_error="  ")

    def created_on(token):
        return token.created_at.date()

    def sent(token):
        return token.mailed_at is not None

    sent.boolean = True
    stock = type(
        "StockTokenAdmin",
        (admin.ModelAdmin,),
        {
            "list_display": [
                "id",
                "account",
                "action",
                "created_at",
                created_on,
                lambda token: None,
                sent,
                "mail_error",
                "__str__",
            ],
            "list_display_links": ["action"],
            "quick_rows": True,
        },
    )(Token, admin.site)
    request = rf.get("/")
    request.user = admin_user
    changelist = stock.get_changelist_instance(request)
    changelist.formset = None
    assert quick_rows(changelist) == djangos_rows(changelist)


def test_an_admin_that_does_not_ask_keeps_djangos_rows(rf, admin_user):
    """A stock admin of a table whose list template asks for the kit's rows (bench/admin.py's beside
    ours) gets Django's own, cell by cell."""
    from django.contrib import admin

    AccountFactory(login="jane")
    request = rf.get("/")
    request.user = admin_user
    ours = admin.site.get_model_admin(Token).get_changelist_instance(request)
    stock = admin.ModelAdmin(Token, admin.site).get_changelist_instance(request)
    ours.formset = stock.formset = None  # as changelist_view leaves a list without list_editable
    assert [len(row) for row in quick_result_list(ours)["results"]] == [1]
    assert [len(row) for row in quick_result_list(stock)["results"]] == [len(stock.list_display)]
