"""A read-only page's fieldsets written by the admin kit (platform_events/admin_kit/fieldsets.py):
Django's own HTML, element for element (blank lines aside)."""

import pytest
from django.contrib import admin
from django.contrib.admin import helpers
from django.test.html import parse_html
from django.urls import reverse

from accounts.models import Account
from accounts.services import account_suspend
from lifecycle.demo.factories import AccountFactory
from platform_events.admin_kit.fieldsets import fieldset_html
from platform_events.audit.context import audit_context
from tests.support import as_shown, djangos_admin_template

pytestmark = pytest.mark.django_db


def djangos(fieldset, index: int) -> str:
    context = {"fieldset": fieldset, "heading_level": 2, "prefix": "fieldset", "id_prefix": 0, "id_suffix": index}
    return djangos_admin_template("includes/fieldset.html", context)


def ours(fieldset, index: int):
    return fieldset_html(fieldset, heading_level=2, prefix="fieldset", id_prefix=0, id_suffix=index)


@pytest.mark.parametrize("state", ["provisioned", "active", "suspended", "deprovisioned", "erased"])
def test_the_account_pages_fieldsets_are_djangos(admin_client, admin_user, state):
    """Every fieldset of the account page, in each state (the suspension's who and why is HTML, with a
    reason that needs escaping), is the kit's on the page and the same HTML as Django's template."""
    account = AccountFactory(active=state != "provisioned", login="jane.o", email="o'jane&co@example.com")
    if state == "suspended":
        with audit_context(actor=admin_user, reason='<b>"spam"</b> & more'):
            account_suspend(account=account, actor=admin_user)
    elif state != "active" and state != "provisioned":
        account = AccountFactory(**{state: True})
    response = admin_client.get(reverse("admin:accounts_account_change", args=[account.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    fieldsets = list(response.context["adminform"])
    assert len(fieldsets) == 2
    for index, fieldset in enumerate(fieldsets):
        written = ours(fieldset, index)
        assert written in page
        assert parse_html(written) == parse_html(djangos(fieldset, index))
        assert as_shown(written) == as_shown(djangos(fieldset, index))


def test_collapsible_described_and_shared_lines_are_djangos(rf, admin_user):
    """What the account page does not have yet: a fieldset that collapses, with a description, a line of
    two fields, a field without a name (a lambda)."""
    account = AccountFactory(login="jane")
    stock = type(
        "StockAccountAdmin",
        (admin.ModelAdmin,),
        {
            "readonly_fields": ["login", "email", "status", "created_at", lambda account: "<i>x</i>"],
            "fieldsets": [
                (None, {"fields": ["login", ("email", "status")]}),
                (
                    "<i>Dates</i> & times",
                    {"fields": ["created_at"], "classes": ["collapse", "wide"], "description": "<b>When</b>"},
                ),
            ],
        },
    )(Account, admin.site)
    stock.fieldsets[0][1]["fields"].append(stock.readonly_fields[-1])
    fieldsets = list(admin_form(stock, rf, admin_user, account))
    for index, fieldset in enumerate(fieldsets):
        assert parse_html(ours(fieldset, index)) == parse_html(djangos(fieldset, index))
        assert as_shown(ours(fieldset, index)) == as_shown(djangos(fieldset, index))


def test_a_fieldset_with_a_form_field_is_left_to_django(rf, admin_user):
    """A field that takes input is Django's to write (its widget, errors and help): the kit writes nothing."""
    account = AccountFactory()
    stock = type(
        "StockAccountAdmin", (admin.ModelAdmin,), {"fields": ["login", "status"], "readonly_fields": ["status"]}
    )(Account, admin.site)
    (fieldset,) = admin_form(stock, rf, admin_user, account)
    assert ours(fieldset, 0) is None


def admin_form(model_admin, rf, user, obj) -> helpers.AdminForm:
    request = rf.get("/")
    request.user = user
    form = model_admin.get_form(request, obj)(instance=obj)
    return helpers.AdminForm(
        form,
        model_admin.get_fieldsets(request, obj),
        {},
        model_admin.get_readonly_fields(request, obj),
        model_admin=model_admin,
    )
