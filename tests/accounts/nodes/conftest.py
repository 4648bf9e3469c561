import pytest
from django.db import connections

from accounts.nodes import services
from lifecycle.demo.factories import AccountFactory
from platform_events.audit.models import AuditEvent
from tests.accounts.nodes.storage_node import LOOPBACK

SERVICE = "sync-1.5"
# tokenserver's tests' default node.
NODE_URL = "https://phx12"


@pytest.fixture
def nodes(db):
    """tokenserver's `db` fixture: the sync-1.5 service with one node of capacity 100."""
    services.service_add(service=SERVICE, pattern="{node}/1.5/{uid}")
    services.node_add(service=SERVICE, node=NODE_URL, capacity=100, actor=None)
    return services


@pytest.fixture
def account():
    """A new account's id per call (tokenserver's test addresses)."""
    return lambda: AccountFactory().id


@pytest.fixture
def loopback_nodes(settings):
    """Storage nodes allowed on loopback, where the tests' nodes listen (tests/accounts/nodes/storage_node.py):
    NODE_ALLOWED_NETWORKS, which allows public addresses only when unset."""
    settings.NODE_ALLOWED_NETWORKS = (LOOPBACK,)
    return settings.NODE_ALLOWED_NETWORKS


def runtime_login() -> str:
    """The runtime role's login, which the trail's db_user names."""
    return connections["default"].settings_dict["USER"]


def events(action: str):
    """The trail's rows of ``action``, oldest first."""
    return list(AuditEvent.objects.filter(action=action).order_by("occurred_at"))


def assigned(account, count: int = 1) -> list[int]:
    """``count`` accounts given a node as a client's sync gives it (routine: no audit row)."""
    return [services.assignment_allocate(service=SERVICE, account_id=account()).uid for _ in range(count)]
