"""The site's own URLs beside the apps': the icon, for browsers and for clients that guess at it."""

import pytest
from django.test import Client
from django.urls import reverse

pytestmark = pytest.mark.django_db

ICON = "/static/lifecycle/favicon.svg"


def test_favicon_ico_sends_the_client_to_the_icon_for_a_day():
    response = Client().get("/favicon.ico")
    assert (response.status_code, response["Location"]) == (302, ICON)
    assert "max-age=86400" in response["Cache-Control"]
    icon = Client().get(ICON)
    assert icon.status_code == 200 and icon["Content-Type"] == "image/svg+xml"
    assert b"<svg" in b"".join(icon.streaming_content)


@pytest.mark.parametrize("page", ["/signup/", reverse("admin:login")], ids=["public", "back-office"])
def test_every_page_names_its_icon_so_browsers_do_not_ask_for_favicon_ico(page):
    html = Client().get(page).content.decode()
    assert f'<link rel="icon" href="{ICON}" type="image/svg+xml">' in html
