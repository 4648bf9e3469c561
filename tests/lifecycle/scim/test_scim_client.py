"""/scim/v2/ against a live server, read by a SCIM client (scim2-client over httpx2), as an identity
provider's provisioning would: discovery, a User, a search that finds one and one that finds none."""

import httpx2
import pytest
from scim2_client.engines.httpx2 import SyncSCIMClient
from scim2_models import ListResponse, NotFoundException, SearchRequest, ServiceProviderConfig, User

from lifecycle.demo.factories import AccountFactory
from platform_events.api.clients import api_client_create

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def provider(live_server, settings):
    settings.PUBLIC_BASE_URL = live_server.url
    _, key = api_client_create(name="okta", scopes=["scim"], actor=None)
    http = httpx2.Client(base_url=f"{live_server.url}/scim/v2", headers={"Authorization": f"Bearer {key}"})
    client = SyncSCIMClient(http)
    client.discover()
    yield client
    http.close()


def test_a_scim_client_discovers_the_service_and_reads_users(provider):
    ada = AccountFactory(active=True, login="ada", email="ada@example.com")
    AccountFactory(active=True, login="bob", email="bob@example.com")
    assert [rt.endpoint for rt in provider.provider.resource_types] == ["/Users"]
    config = provider.query(ServiceProviderConfig)
    assert config.filter.supported and not config.patch.supported

    user = provider.query(User, str(ada.pk))
    assert (user.user_name, user.active, user.emails[0].value) == ("ada", True, "ada@example.com")

    found = provider.query(User, query_parameters=SearchRequest(filter='userName eq "ada"'))
    assert isinstance(found, ListResponse) and [u.id for u in found.resources] == [str(ada.pk)]
    none = provider.query(User, query_parameters=SearchRequest(filter='userName eq "ann@example.com"', count=100))
    assert none.total_results == 0 and not none.resources


def test_an_unknown_user_is_a_scim_error_the_client_reads(provider):
    with pytest.raises(NotFoundException, match="There is no User '999999'"):
        provider.query(User, "999999")


def test_a_scim_client_deletes_a_user_and_it_is_gone(provider):
    from accounts.models import AccountStatus

    ada = AccountFactory(active=True, login="ada", email="ada@example.com")
    provider.delete(User, str(ada.pk))
    ada.refresh_from_db()
    assert ada.status == AccountStatus.DEPROVISIONED
    with pytest.raises(NotFoundException):
        provider.query(User, str(ada.pk))
