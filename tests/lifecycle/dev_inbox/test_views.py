"""/dev/mail/ (lifecycle/dev_inbox/): the mailroom's e-mails kept as files, listed newest first and read
one by one with the working link and the code picked out; staff only; not there with DEBUG off."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from accounts.models import Account, AccountStatus
from lifecycle.demo.factories import AccountFactory
from tests.support import database_url_for_tests, manage
from tokens.mailroom.drain import drain

pytestmark = [pytest.mark.django_db, pytest.mark.urls("tests.lifecycle.dev_inbox.urls")]
INBOX = "/dev/mail/"
PRODUCTION = {
    "SECRET_KEY": "k3y-" + "x1y2z3" * 10,
    "PUBLIC_BASE_URL": "https://lifecycle.example.com",
    "WEBHOOK_SECRET_KEYS": "k1:" + "A" * 43 + "=",
}


@pytest.fixture
def inbox(settings, tmp_path):
    """The mailroom sending to an inbox of its own."""
    settings.EMAIL_BACKEND = "lifecycle.dev_inbox.backend.InboxBackend"
    settings.DEV_INBOX_DIR = tmp_path / "mail"
    return settings.DEV_INBOX_DIR


def test_an_activation_e_mail_is_listed_and_its_link_activates_the_account(inbox, admin_client):
    first, second = AccountFactory(email="first@example.com"), AccountFactory(email="second@example.com")
    assert drain().sent == 2
    listed = admin_client.get(INBOX).content.decode()
    rows = re.findall(r"<td>([^<]*)</td>\s*<td>([^<]*)</td>\s*<td><a href=\"([^\"]+)\">([^<]+)</a>", listed)
    assert sorted((to, subject) for _, to, _, subject in rows) == [
        ("first@example.com", f"Activate your account {first.login}"),
        ("second@example.com", f"Activate your account {second.login}"),
    ]
    opened = admin_client.get(next(href for _, to, href, _ in rows if to == "first@example.com"))
    message = opened.content.decode()
    link = re.search(r'<a href="([^"]+)" id="working-link">', message).group(1)
    code = re.search(r'<strong id="code">([0-9]{5})</strong>', message).group(1)
    assert link.startswith("http://127.0.0.1:8000/activate/")
    assert f"code where you signed up: {code}" in message
    person = Client()
    path = link.removeprefix("http://127.0.0.1:8000")
    password = {"password": "a-long-Passw0rd-9", "password_again": "a-long-Passw0rd-9"}
    person.post(path, password)
    assert Account.objects.get(pk=first.pk).status == AccountStatus.ACTIVE
    assert Account.objects.get(pk=second.pk).status == AccountStatus.PROVISIONED


def test_the_newest_is_listed_first(inbox, admin_client):
    AccountFactory(email="earlier@example.com")
    drain()
    AccountFactory(email="later@example.com")
    drain()
    listed = admin_client.get(INBOX).content.decode()
    assert listed.index("later@example.com") < listed.index("earlier@example.com")


def test_an_empty_inbox_says_how_to_fill_it(inbox, admin_client):
    assert "No e-mails yet." in admin_client.get(INBOX).content.decode()


def test_with_email_url_set_the_inbox_says_the_e_mails_go_there(inbox, admin_client, settings):
    settings.EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    assert "EMAIL_URL is set: e-mails go to its server now, not here." in admin_client.get(INBOX).content.decode()


@pytest.mark.parametrize("name", ["nothing", "..%2F..%2Fsettings", "20261126T101325.123456-0000000g"])
def test_a_name_that_is_not_a_kept_message_is_404(inbox, admin_client, name):
    assert admin_client.get(f"{INBOX}{name}/").status_code == 404


def test_a_kept_name_that_was_removed_is_404(inbox, admin_client):
    assert admin_client.get(f"{INBOX}20261126T101325.123456-0123abcd/").status_code == 404


@pytest.mark.parametrize("who", ["anonymous", "not staff"])
def test_only_staff_read_it(inbox, who):
    """The messages hold working links and codes for any account."""
    client = Client()
    if who == "not staff":
        client.force_login(get_user_model().objects.create_user("visitor", password="x"))
    response = client.get(INBOX)
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


@pytest.mark.parametrize(("debug", "status"), [("true", 302), ("false", 404)])
def test_the_product_mounts_it_only_with_debug_on(debug, status):
    """The product's own URLs, read in a process started with DEBUG on, or off with production settings:
    the inbox asks for a staff login, or is not there at all."""
    request = "from django.test import Client; print(Client(HTTP_HOST='127.0.0.1').get('/dev/mail/', secure=True).status_code)"
    env = {**(PRODUCTION if debug == "false" else {}), "DEBUG": debug, "ALLOWED_HOSTS": "127.0.0.1"}
    result = manage("shell", "--no-imports", "-c", request, DATABASE_URL=database_url_for_tests(), **env)
    assert result.stdout.strip() == str(status), result.stderr
