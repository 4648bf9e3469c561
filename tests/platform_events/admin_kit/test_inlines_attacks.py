"""The account page's inlines, written by the admin kit, attacked as each staff role that may open it."""

import pytest

from lifecycle.demo.factories import AccountFactory
from tests.platform_events.admin_kit.test_inlines import account_page, assert_inlines_are_djangos
from tests.support import staff_client
from tokens.links import secret_to_text
from tokens.models import Token

pytestmark = [pytest.mark.django_db, pytest.mark.attack]


@pytest.mark.parametrize("role", ["Support", "Privacy"])
def test_the_kits_token_rows_show_no_credential_to_any_role_that_sees_them(role):
    """The tokens inline, written by the kit, shows each staff role that may open the account page
    neither the secret (as the link carries it, or in hex), its digest, nor the code."""
    account = AccountFactory(login="jane")
    token = Token.objects.get(account=account)

    response = account_page(staff_client(role), account)

    page = response.content.decode()
    assert assert_inlines_are_djangos(response) >= 1 and 'id="tokens-group"' in page
    for credential in (secret_to_text(token.secret), bytes(token.secret).hex(), bytes(token.secret_digest).hex()):
        assert credential not in page
    assert token.code not in page
