"""SCIM's URLconf: each view imported at the first SCIM request, CSRF-exempt and named as the view it serves."""

from django.urls import resolve

from lifecycle.scim import views


def test_a_deferred_view_is_named_as_the_view_it_serves():
    """resolve() and the request metrics' labels name the view, not the URLconf's wrapper."""
    assert resolve("/scim/v2/Users/.search").view_name == "scim:lifecycle.scim.views.not_served"
    assert resolve("/scim/v2/Users/7")._func_path == "lifecycle.scim.views.user"


def test_every_route_is_csrf_exempt_and_serves_its_view():
    """A client with a bearer token sends no CSRF token: every route is exempt, as every SCIM view is,
    and hands the request to the view of its name."""
    for path, name in [
        ("/scim/v2/", "service_provider_config"),
        ("/scim/v2/Users", "users"),
        ("/scim/v2/Users/7", "user"),
    ]:
        served = resolve(path).func
        assert served.csrf_exempt and served.__name__ == name and callable(getattr(views, name))
