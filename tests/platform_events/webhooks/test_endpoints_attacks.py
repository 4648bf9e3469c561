"""The runtime role against the webhook endpoints' rows: the trail names an endpoint by id, so an id
changed in place (platform_events/sql/0020_kept_ids.sql refuses it) would have later rows name one
endpoint for another, with no row saying so."""

import uuid

import pytest
from django.db import DatabaseError, connection

pytestmark = [pytest.mark.attack, pytest.mark.django_db]


def test_the_runtime_role_cannot_change_an_endpoints_id(make_endpoint):
    endpoint, _secret = make_endpoint()
    with pytest.raises(DatabaseError, match="webhook_subscriptions .* keeps its id"), connection.cursor() as cursor:
        cursor.execute("UPDATE webhook_subscriptions SET id = %s WHERE id = %s", [uuid.uuid4(), endpoint.pk])
