"""Attacks on the "delete my account" pages (/delete-account/, /delete/<secret>): what a deletion
link's holder, a mail scanner or a stranger can make them do."""

import pytest
from django.test import Client
from django.urls import reverse

from accounts.models import AccountStatus
from accounts.services import account_deprovision
from lifecycle.demo.factories import AccountFactory
from tests.support import expire
from tokens.links import landing_path
from tokens.mailroom.drain import drain
from tokens.models import TokenAction
from tokens.services import token_request_mail

pytestmark = [pytest.mark.django_db, pytest.mark.attack]


def deletion_token(account):
    return token_request_mail(identifier=account.login, action=TokenAction.DELETION, actor=None)


@pytest.mark.parametrize("lapse", ["expired", "superseded"])
def test_a_lapsed_deletion_links_page_offers_a_new_deletion_e_mail_not_an_activation_one(client, lapse):
    """A deletion link that ran out (or was replaced) sends its holder to ask again where a deletion
    e-mail is asked for, /delete-account/, as its e-mail says; /resend/ (activation) sends an active
    account nothing, so the person would wait for an e-mail that never comes."""
    account = AccountFactory(active=True)
    token = deletion_token(account)
    link = landing_path(token)
    if lapse == "expired":
        expire(token)
    else:
        drain()  # mailed: asking again now gives a new link, which replaces this one
        token_request_mail(identifier=account.login, action=TokenAction.DELETION, actor=None)
        token.refresh_from_db()
        assert token.superseded_at is not None
    response = client.post(link)
    assert response.status_code == 410
    text = response.content.decode()
    assert f'href="{reverse("delete-account")}"' in text, text[text.find('<p class="next">') :][:200]
    assert f'href="{reverse("resend")}"' not in text


@pytest.mark.parametrize("method", ["put", "patch", "delete", "options", "trace"])
def test_the_deletion_link_answers_other_methods_as_the_other_link_pages_do(method):
    """Every other link page (activate, recover, restore) takes GET and POST only and answers 405 to
    the rest; the deletion link answers any method with its confirmation page (the account's login and
    masked address), a TRACE or an OPTIONS too."""
    account = AccountFactory(active=True)
    restore_owner = AccountFactory(active=True)
    account_deprovision(account=restore_owner, actor=None)
    restore = token_request_mail(identifier=restore_owner.email, action=TokenAction.RESTORE, actor=None)
    client = Client()
    other = getattr(client, method)(landing_path(restore))
    response = getattr(client, method)(landing_path(deletion_token(account)))
    account.refresh_from_db()
    assert account.status == AccountStatus.ACTIVE  # nothing changes either way
    assert (response.status_code, other.status_code) == (405, 405)
