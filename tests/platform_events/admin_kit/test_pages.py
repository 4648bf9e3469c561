"""The admin kit's pages: the add page of a form saved by a service, the report once added, and a
credential shown once without ever being printed by a log or an error report."""

import pytest
from django import forms
from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.backends.db import SessionStore
from django.test import RequestFactory

from accounts.nodes.models import Service
from platform_events.admin_kit.pages import Concealed, add_page, added, shown_once

pytestmark = pytest.mark.django_db


class NameForm(forms.Form):
    name = forms.CharField()
    note = forms.CharField(required=False)


@pytest.fixture
def request_():
    request = RequestFactory().post("/admin/accounts/service/add/", {"name": "sync"})
    request.user = get_user_model().objects.create_superuser("boss", password="a-long-password-1")
    request.session = SessionStore()
    request._messages = FallbackStorage(request)
    return request


def service_admin(**attributes):
    return type("KitServiceAdmin", (admin.ModelAdmin,), attributes)(Service, admin.site)


def test_the_add_page_shows_every_field_of_the_form_with_djangos_buttons(request_):
    page = add_page(service_admin(), request_, NameForm(), title="Add a service")
    page.render()
    html = page.content.decode()
    assert page.context_data["title"] == "Add a service"
    assert 'name="name"' in html and 'name="note"' in html
    assert 'name="_addanother"' in html  # Django's own change form and its buttons


def test_the_add_page_of_a_credential_says_what_comes_next(request_):
    model_admin = service_admin(add_form_template="admin/add_form_shown_once.html")
    page = add_page(model_admin, request_, NameForm(), title="Add a service", submit="Add it and show its key")
    page.render()
    html = page.content.decode()
    assert 'value="Add it and show its key"' in html and 'name="_addanother"' not in html


def test_added_says_so_and_goes_to_the_list_or_to_a_new_form(request_):
    service = Service(service="sync-1.5")
    answer = added(service_admin(), request_, service)
    assert answer.url == "/admin/accounts/service/"
    assert [(m.level, m.message) for m in messages.get_messages(request_)] == [
        (messages.SUCCESS, "The service “sync-1.5” was added.")
    ]
    request_.POST = request_.POST.copy()
    request_.POST["_addanother"] = "1"
    assert added(service_admin(), request_, service).url == "/admin/accounts/service/add/"


def test_a_credential_renders_as_itself_but_its_repr_hides_it():
    shown = Concealed("lc_secret")
    assert str(shown) == "lc_secret"
    assert "lc_secret" not in repr(shown) and "lc_secret" not in repr({"shown": shown})


def test_the_shown_once_page_carries_the_credential_concealed(request_):
    page = shown_once(
        request_,
        service_admin(),
        Service(service="sync"),
        template="admin/shown_once.html",
        title="The key",
        label="API key",
        secret="lc_secret",
    )
    assert page.context_data["shown_id"] == "api-key"
    assert isinstance(page.context_data["shown"], Concealed)
    page.render()
    assert 'value="lc_secret"' in page.content.decode()
