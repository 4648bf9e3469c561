"""The admin's user pages (lifecycle/backoffice/staff_admin.py): the add page asks for the role and says
which roles exist and what each may do; what it makes is a staff login in that role."""

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.urls import reverse

from lifecycle.backoffice.roles import ROLES

pytestmark = pytest.mark.django_db
ADD = reverse("admin:auth_user_add")


def test_the_add_page_names_each_role_and_what_it_may_do(admin_client):
    response = admin_client.get(ADD)
    page = response.content.decode()
    for role in ROLES.values():
        assert f"<li><strong>{role.name}</strong>: {role.may}.</li>" in page
    assert "A superuser (Superuser status, on the login's page) may do everything." in page
    assert response.context["adminform"].form["is_staff"].value() is True  # every user here is staff


def test_the_change_page_names_the_roles_too(admin_client, admin_user):
    page = admin_client.get(reverse("admin:auth_user_change", args=[admin_user.pk])).content.decode()
    assert all(f"<strong>{name}</strong>" in page for name in ROLES)


def test_the_add_page_makes_a_staff_login_in_the_role_chosen(admin_client):
    form = {
        "username": "jo",
        "usable_password": "true",
        "password1": "a-long-Passw0rd-for-jo",
        "password2": "a-long-Passw0rd-for-jo",
        "is_staff": "on",
        "groups": [Group.objects.get(name="Integrator").pk],
    }
    response = admin_client.post(ADD, form)
    assert response.status_code == 302, response.context["adminform"].form.errors
    user = get_user_model().objects.get(username="jo")
    assert user.is_staff and [group.name for group in user.groups.all()] == ["Integrator"]
