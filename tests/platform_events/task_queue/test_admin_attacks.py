"""Attacks on django-q2's pages in the admin (platform_events/task_queue/admin.py): the public forms'
queued and failed tasks carry a password hash, which no page shows."""

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from tests.support import NEW_PASSWORD

pytestmark = [pytest.mark.attack, pytest.mark.django_db]


def test_queued_sign_up_does_not_show_its_password_hash(admin_client):
    from django_q.models import OrmQ

    Client().post(reverse("sign-up"), {"email": "new@example.com", "login": "newbie"} | NEW_PASSWORD)
    queued = OrmQ.objects.get()
    password_hash = next(arg for arg in queued.args() if isinstance(arg, str) and "$" in arg)
    response = admin_client.get(f"/admin/django_q/ormq/{queued.pk}/change/")
    assert response.status_code in (200, 403, 404)
    assert password_hash.encode() not in response.content
    assert password_hash.split("$")[-1].encode() not in response.content


def test_a_failed_sign_up_task_does_not_show_its_password_hash(admin_client):
    """django-q2 keeps a failed task with its arguments; its pages show neither them nor the result."""
    from django_q.models import Failure

    password_hash = "argon2$argon2id$v=19$m=102400,t=2,p=8$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA"
    failure = Failure.objects.create(
        id="f" * 32,
        name="failed-sign-up",
        func="tokens.tasks.sign_up",
        args=("new@example.com", "newbie", password_hash, {}),
        kwargs={},
        result="boom",
        started=timezone.now(),
        stopped=timezone.now(),
        success=False,
    )
    for url in ("/admin/django_q/failure/", f"/admin/django_q/failure/{failure.pk}/change/"):
        response = admin_client.get(url)
        assert response.status_code == 200 and b"tokens.tasks.sign_up" in response.content
        assert password_hash.split("$")[-1].encode() not in response.content
