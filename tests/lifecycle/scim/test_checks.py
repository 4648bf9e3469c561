"""`check --deploy` imports the SCIM views that the URLconf imports only at the first SCIM request."""

from django.core import checks

from lifecycle.scim import urls
from lifecycle.scim.checks import check_scim_views


def test_the_deploy_checks_find_every_served_view():
    assert "users" in urls.SERVED
    assert check_scim_views(None) == []
    assert check_scim_views in checks.registry.registry.get_checks(include_deployment_checks=True)


def test_a_served_name_the_views_do_not_have_stops_the_deploy(monkeypatch):
    monkeypatch.setattr(urls, "SERVED", {*urls.SERVED, "userz"})

    assert [(error.id, error.msg) for error in check_scim_views(None)] == [
        ("lifecycle.E002", "the SCIM URLconf serves 'userz', which lifecycle.scim.views does not have")
    ]


def test_views_that_cannot_be_imported_stop_the_deploy(monkeypatch):
    monkeypatch.setattr(urls, "VIEWS", "lifecycle.scim.no_such_views")

    [error] = check_scim_views(None)

    assert error.id == "lifecycle.E001" and "lifecycle.scim.no_such_views cannot be imported" in error.msg
