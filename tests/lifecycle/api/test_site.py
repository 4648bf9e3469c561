"""The API's URL patterns (lifecycle/api/site.py): whatever the method, a path under /api/v1/ that
names nothing is a problem+json 404."""

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("method", ["get", "post", "put", "patch", "delete"])
def test_a_path_that_names_nothing_is_a_problem_404_whatever_the_method(method):
    client = Client(enforce_csrf_checks=True)  # as a service calls: no cookie, no CSRF token
    body = {} if method == "get" else {"data": "{}", "content_type": "application/json"}
    response = getattr(client, method)("/api/v1/nowhere", **body)
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/problem+json")
    assert response.json()["status"] == 404
