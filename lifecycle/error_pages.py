"""The pages that refuse something, each in the look of the part of the site it refuses.

- The lock-out after repeated failed sign-ins (django-axes' ``AXES_LOCKOUT_CALLABLE``): the
  back-office's look, no navigation (nobody is signed in), what happened, for how many minutes and
  until when, and whom to ask. Still axes' status (``AXES_HTTP_RESPONSE_CODE``, 429). It reads the
  same for every login typed, so it never tells whether a login exists.
- A 403 (``handler403``): for a signed-in staff member in the back-office, whom they are signed in
  as, that their role does not include the page, whom to ask, and the way back to the dashboard;
  anywhere else, the public pages' look.
- A failed CSRF check (``CSRF_FAILURE_VIEW``): the same two looks, still 403.

Whom staff ask is ``STAFF_CONTACT`` (whoever administers the back-office), not the public pages'
``SUPPORT_CONTACT`` (see settings).
"""

import math

from axes.helpers import get_client_username, get_cool_off
from django.conf import settings
from django.contrib import admin
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html


def lockout_page(request: HttpRequest, original_response=None, credentials: dict | None = None) -> HttpResponse:
    """django-axes' answer to a locked-out sign-in: the back-office's lock-out page, with
    ``Retry-After``.

    The lock-out ends one cool-off after the last failed try, and each try while locked out counts as
    one (axes' ``AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT``, on by default), this one included:
    so it ends one cool-off from now, and the page says that trying again starts it again."""
    cool_off = get_cool_off(request)
    tried_at = getattr(request, "axes_attempt_time", None) or timezone.now()
    context = {
        **admin.site.each_context(request),
        "title": "Signing in is paused",
        "login": get_client_username(request, credentials) or "",
        "minutes": math.ceil(cool_off.total_seconds() / 60) if cool_off else None,
        "until": tried_at + cool_off if cool_off else None,
        **staff_contact(),
    }
    response = render(request, "admin/lockout.html", context, status=settings.AXES_HTTP_RESPONSE_CODE)
    if cool_off:
        response["Retry-After"] = str(math.ceil(cool_off.total_seconds()))
    return response


def permission_denied(request: HttpRequest, exception=None) -> HttpResponse:
    """handler403: the back-office's "not part of your role" page for a signed-in staff member there,
    the public pages' 403 anywhere else."""
    user = getattr(request, "user", None)
    if not (_in_back_office(request) and user is not None and user.is_active and user.is_staff):
        return render(request, "403.html", status=403)
    roles = ["superuser"] if user.is_superuser else list(user.groups.order_by("name").values_list("name", flat=True))
    context = {
        **admin.site.each_context(request),
        "title": "This page is not part of your role",
        "roles": roles,
        "path": request.path,
        **staff_contact(),
    }
    return render(request, "admin/403.html", context, status=403)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: the form could not be checked (left open too long, cookies blocked); the page
    in the look of the part of the site the form was in. Django's reason only with DEBUG on, as Django
    itself does."""
    context = {"reason": reason if settings.DEBUG else ""}
    if _in_back_office(request):
        context |= {**admin.site.each_context(request), "title": "This form has expired", **staff_contact()}
        return render(request, "admin/csrf_failure.html", context, status=403)
    return render(request, "403_csrf.html", context, status=403)


def staff_contact() -> dict[str, str]:
    """``staff_contact`` for the templates: STAFF_CONTACT as a link (mailto: for an address), or, when
    it is not set, "an administrator of this back-office"."""
    contact = settings.STAFF_CONTACT
    if not contact:
        return {"staff_contact": "an administrator of this back-office"}
    href = contact if contact.startswith(("http://", "https://")) else f"mailto:{contact}"
    return {"staff_contact": format_html('<a href="{}">{}</a>', href, contact)}


def _in_back_office(request: HttpRequest) -> bool:
    return request.path.startswith(reverse("admin:index"))
