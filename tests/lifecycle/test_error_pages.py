"""The pages that refuse (lifecycle/error_pages.py): the lock-out page and the back-office's 403 in the
back-office's look, saying what happened, for how long and whom to ask; the public pages' refusals in
the public look."""

import re
from datetime import timedelta

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.test import Client, RequestFactory
from django.urls import reverse
from django.utils import timezone

from lifecycle.error_pages import permission_denied

pytestmark = pytest.mark.django_db
PASSWORD = "right-password-123"


def locked_out(username: str, settings, client: Client | None = None):
    """Fail ``username``'s sign-in until django-axes locks it out; the lock-out's response."""
    client = client or Client()
    for _ in range(settings.AXES_FAILURE_LIMIT - 1):
        client.post(reverse("admin:login"), {"username": username, "password": "wrong"})
    return client.post(reverse("admin:login"), {"username": username, "password": "wrong"})


def test_the_lock_out_is_the_back_offices_page_with_its_length_and_end(settings):
    """After AXES_FAILURE_LIMIT failures the answer is axes' 429, as the back-office's page: header, no
    navigation, what happened, the cool-off in minutes and the time it ends, and Retry-After."""
    get_user_model().objects.create_user("support9", password=PASSWORD, is_staff=True)
    before = timezone.now()
    response = locked_out("support9", settings)
    page = response.content.decode()
    assert response.status_code == 429
    assert "Lifecycle back-office" in page
    assert 'id="nav-sidebar"' not in page and "Log out" not in page
    assert "Too many failed sign-ins for this login from your address." in page
    assert "<strong>30 minutes</strong>" in page
    ends = re.search(r'<time datetime="([^"]+)">(\d\d:\d\d) UTC</time>', page)
    assert ends, page
    until = timezone.datetime.fromisoformat(ends.group(1))
    assert before + timedelta(minutes=30) <= until <= timezone.now() + timedelta(minutes=30)
    assert response["Retry-After"] == "1800"


def test_the_lock_out_page_says_whom_to_ask(settings):
    """STAFF_CONTACT is named, with a mailto: link; without it, the page says an administrator."""
    settings.STAFF_CONTACT = "it-desk@example.com"
    page = locked_out("support9", settings).content.decode()
    assert '<a href="mailto:it-desk@example.com">it-desk@example.com</a> to unlock your login now' in page
    settings.STAFF_CONTACT = ""
    assert (
        "an administrator of this back-office to unlock your login now"
        in locked_out("support8", settings).content.decode()
    )


def test_the_lock_out_page_does_not_tell_whether_the_login_exists(settings):
    """A real login and one nobody has get the same page, word for word but for the login typed and the
    minute the lock-out ends."""
    get_user_model().objects.create_user("support9", password=PASSWORD, is_staff=True)

    def words(response, login):
        page = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", response.content.decode())
        page = re.sub(r"<time[^>]*>[^<]*</time>", "", page)
        return page.replace(login, "LOGIN")

    real = locked_out("support9", settings)
    nobody = locked_out("nobody9", settings)
    assert (real.status_code, nobody.status_code) == (429, 429)
    assert words(real, "support9") == words(nobody, "nobody9")


def test_a_locked_out_login_stays_out_with_its_right_password(settings):
    """The styled page changes nothing of the lock-out itself: the right password is refused too."""
    get_user_model().objects.create_user("support9", password=PASSWORD, is_staff=True)
    client = Client()
    locked_out("support9", settings, client)
    response = client.post(reverse("admin:login"), {"username": "support9", "password": PASSWORD})
    assert response.status_code == 429
    assert "Too many failed sign-ins" in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_an_auditors_403_is_branded_says_who_and_links_back(auditor):
    """An Auditor opening the accounts gets the back-office's 403: signed in as whom, with which role,
    that the role does not include the page, whom to ask, and a link back to the dashboard."""
    response = auditor.get("/admin/accounts/account/")
    page = response.content.decode()
    assert response.status_code == 403
    assert "Lifecycle back-office" in page
    assert "You are signed in as <strong>auditor1</strong>" in page
    assert "role: Auditor" in page
    assert "Your role does not include this page, <code>/admin/accounts/account/</code>." in page
    assert "ask an administrator of this back-office to add it to your role" in page
    assert '<a class="button" href="/admin/">Back to the dashboard</a>' in page


def test_the_403_names_the_staff_contact(auditor, settings):
    settings.STAFF_CONTACT = "https://intranet.example.com/it"
    page = auditor.get("/admin/accounts/account/").content.decode()
    assert '<a href="https://intranet.example.com/it">https://intranet.example.com/it</a>' in page


def test_a_403_outside_the_back_office_keeps_the_public_look(rf: RequestFactory):
    """handler403 on a public path (even for a staff member) answers in the public pages' look."""
    request = rf.get("/signup/")
    request.user = get_user_model().objects.create_user("support9", password=PASSWORD, is_staff=True)
    response = permission_denied(request, PermissionDenied())
    page = response.content.decode()
    assert response.status_code == 403
    assert "<h1>Not allowed</h1>" in page and "Need help? Contact" in page
    assert "Lifecycle back-office" not in page


def test_a_csrf_failure_on_a_public_page_keeps_the_public_look():
    """A form posted without its CSRF token: 403, the public look, nothing done."""
    response = Client(enforce_csrf_checks=True).post(reverse("sign-up"), {"email": "a@example.com"})
    page = response.content.decode()
    assert response.status_code == 403
    assert "<h1>Please send the form again</h1>" in page and "Need help? Contact" in page
    assert "Lifecycle back-office" not in page


def test_a_csrf_failure_in_the_back_office_is_in_its_look():
    """The sign-in form posted without its CSRF token (a tab left open, cookies blocked): 403, the
    back-office's look, and the sign-in is not counted as a failure."""
    response = Client(enforce_csrf_checks=True).post(reverse("admin:login"), {"username": "x", "password": "y"})
    page = response.content.decode()
    assert response.status_code == 403
    assert "Lifecycle back-office" in page and "This form could not be checked, so nothing was changed." in page
    assert not AccessAttempt.objects.exists()
