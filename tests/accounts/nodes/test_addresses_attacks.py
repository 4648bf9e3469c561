"""Node URLs no request can use, or that carry a password, refused when saved (accounts/nodes/addresses.py)
rather than kept to fail at every purge."""

import pytest

from accounts.nodes import services
from accounts.nodes.errors import InvalidValue
from accounts.nodes.models import Node
from tests.accounts.nodes.conftest import SERVICE

pytestmark = [pytest.mark.attack, pytest.mark.django_db]


@pytest.fixture
def service(db):
    return services.service_add(service=SERVICE, pattern="{node}/1.5/{uid}")


@pytest.mark.parametrize(
    ("url", "sentence"),
    [
        ("https://sync-1.example.com:99999", "its port must be a number from 1 to 65535"),
        ("https://sync-1.example.com:0", "its port must be a number from 1 to 65535"),
        # Kept in the nodes table, shown on the node's pages and in the trail; the purge signs its own token.
        ("https://user:secret@sync-1.example.com", "a node's URL holds no user name or password"),
        ("https://user@sync-1.example.com", "a node's URL holds no user name or password"),
    ],
)
def test_a_node_no_request_can_use_or_with_a_password_is_refused_with_one_sentence(service, url, sentence):
    with pytest.raises(InvalidValue, match=sentence):
        services.node_add(service=SERVICE, node=url, capacity=10, actor=None)
    assert not Node.objects.exists()
