from importlib import import_module

from django.urls import path
from django.views.decorators.csrf import csrf_exempt

app_name = "scim"


VIEWS = "lifecycle.scim.views"
# The names served_by() was given: `check --deploy` imports the views and finds each (lifecycle/scim/checks.py).
SERVED: set[str] = set()


def served_by(name: str):
    """The view ``name`` of lifecycle.scim.views, imported at the first SCIM request: scim2-models builds
    its pydantic models on import (0.35 s of CPU), which a process that loads the URLconf (manage.py
    check, each web worker) would otherwise pay whether it serves SCIM or not. CSRF-exempt, as every
    SCIM view is; named as the view itself, for resolve() and the request metrics' labels."""
    SERVED.add(name)

    @csrf_exempt
    def view(request, *args, **kwargs):
        return getattr(import_module(VIEWS), name)(request, *args, **kwargs)

    view.__name__ = view.__qualname__ = name
    view.__module__ = VIEWS
    return view


urlpatterns = [
    path("", served_by("service_provider_config"), name="root"),
    path("ServiceProviderConfig", served_by("service_provider_config"), name="service-provider-config"),
    path("ResourceTypes", served_by("resource_types"), name="resource-types"),
    path("ResourceTypes/<str:name>", served_by("resource_types"), name="resource-type"),
    path("Schemas", served_by("schemas"), name="schemas"),
    path("Schemas/<str:name>", served_by("schemas"), name="schema"),
    path("Users", served_by("users"), name="users"),
    # A search by POST (RFC 7644 §3.4.3) is not served; "/.search" is no User's id.
    path("Users/.search", served_by("not_served"), {"rest": "Users/.search"}),
    path("Users/<str:user_id>", served_by("user"), name="user"),
    # Anything else (Groups, Bulk, /.search): a SCIM error, not Django's page.
    path("<path:rest>", served_by("not_served"), name="not-served"),
]
