import pytest
from django.contrib.auth import get_user_model

from platform_events.outbox.models import EventType
from platform_events.webhooks.endpoints import endpoint_create

URL = "https://hooks.example.com/lifecycle"


@pytest.fixture
def staff(db):
    """The staff member the audit rows name."""
    return get_user_model().objects.create_user("integrator1", password="x", is_staff=True)


@pytest.fixture
def make_endpoint(staff):
    """An endpoint made by the service, and its plain secret."""

    def make(*, url=URL, events=(EventType.ACCOUNT_CREATED,), owner="partner", **kwargs):
        return endpoint_create(url=url, events=list(events), owner=owner, actor=staff, **kwargs)

    return make
