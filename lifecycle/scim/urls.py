from django.urls import path

from lifecycle.scim import views

app_name = "scim"

urlpatterns = [
    path("", views.service_provider_config, name="root"),
    path("ServiceProviderConfig", views.service_provider_config, name="service-provider-config"),
    path("ResourceTypes", views.resource_types, name="resource-types"),
    path("ResourceTypes/<str:name>", views.resource_types, name="resource-type"),
    path("Schemas", views.schemas, name="schemas"),
    path("Schemas/<str:name>", views.schemas, name="schema"),
    path("Users", views.users, name="users"),
    # A search by POST (RFC 7644 §3.4.3) is not served; "/.search" is no User's id.
    path("Users/.search", views.not_served, {"rest": "Users/.search"}),
    path("Users/<str:user_id>", views.user, name="user"),
    # Anything else (Groups, Bulk, /.search): a SCIM error, not Django's page.
    path("<path:rest>", views.not_served, name="not-served"),
]
