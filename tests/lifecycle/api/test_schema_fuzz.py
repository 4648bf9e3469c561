"""Schemathesis against the live schema: requests generated from /api/v1/openapi.json for every
operation (valid and invalid ones), sent over HTTP to a live server; every answer must be no 500 and
match the schema (status, media type, body), and what the schema calls invalid must be refused."""

import json

import httpx
import hypothesis
import pytest
import schemathesis

from accounts.nodes import services
from lifecycle.api.site import api
from lifecycle.demo.factories import AccountFactory
from platform_events.api.clients import api_client_create
from platform_events.api.models import ApiScope

# The schema the API serves at /api/v1/openapi.json (a test below holds the two together). Loaded
# here rather than from the live server: schemathesis's lazy loader does not run under pytest 9.
SCHEMA = api.get_openapi_schema(path_prefix="/api/v1/")
# Valid by the schema may still be refused by the rules no pattern can say (an address's label over
# 63 characters, a password Django's validators refuse): 422 with its own type, never 400 or 500.
# Invalid data may be refused for its size before its form is read (413): a refusal too.
CONFIG = schemathesis.Config.from_dict(
    {
        "checks": {
            "positive_data_acceptance": {"expected-statuses": ["2xx", 401, 403, 404, 409, 422, 429]},
            "negative_data_rejection": {"expected-statuses": [400, 401, 403, 404, 405, 409, 413, 422, 428, 429]},
        }
    }
)
schema = schemathesis.openapi.from_dict(SCHEMA, config=CONFIG)

# The live server's thread reads what the test committed.
pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def live_api(live_server, settings):
    """The live server's URL, a client's headers, accounts 1 to 3 (the tables are emptied between
    tests) so that generated ids find some, and the service the node operations' example names."""
    settings.API_REQUESTS_PER_MINUTE = 100_000  # the fuzzer's pace is not a client's
    AccountFactory(), AccountFactory(active=True), AccountFactory(suspended=True)
    services.service_add(service="sync-1.5")
    services.node_add(service="sync-1.5", node="https://phx12", capacity=1000, actor=None)
    _, key = api_client_create(name="fuzzer", scopes=list(ApiScope.values), actor=None)
    return live_server.url, {"Authorization": f"Bearer {key}"}


def test_the_fuzzed_schema_is_the_one_served(live_server):
    assert httpx.get(f"{live_server.url}/api/v1/openapi.json").json() == json.loads(json.dumps(SCHEMA))


@schema.parametrize()
@hypothesis.settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture, hypothesis.HealthCheck.too_slow],
    database=None,
    # The same examples every run: a run that fails says so again, and CI does not fail by chance on a
    # case schemathesis calls invalid only for the Authorization header the test adds back to every call.
    derandomize=True,
)
def test_every_operation_answers_as_its_schema_says(case, live_api):
    url, headers = live_api
    case.call_and_validate(base_url=url, headers=headers)
