"""The back-office's one badge and one time format."""

import datetime
import types

import pytest
from django.utils import timezone
from django.utils.formats import date_format

from platform_events.admin_kit.display import Tone, badge, time_column, when

MOMENT = datetime.datetime(2026, 11, 23, 10, 15, 3, 123456, tzinfo=datetime.UTC)


@pytest.mark.parametrize("zone", ["UTC", "Asia/Kolkata", "America/New_York", "Europe/Paris"])
def test_a_time_reads_as_the_sites_datetime_format_in_its_zone(settings, zone):
    """when() writes what DATETIME_FORMAT says (lifecycle/formats/en/formats.py), only faster."""
    settings.TIME_ZONE = zone
    assert when(MOMENT) == date_format(timezone.localtime(MOMENT), "DATETIME_FORMAT")


def test_a_time_is_to_the_second_with_its_zone_or_to_the_microsecond_when_exact(settings):
    settings.TIME_ZONE = "Asia/Kolkata"  # UTC+05:30: an hour-only offset would hide a wrong zone
    assert when(MOMENT) == "2026-11-23 15:45:03 IST"
    assert when(MOMENT, exact=True) == "2026-11-23 15:45:03.123456 IST"


def test_no_time_is_a_dash():
    assert when(None) == "—"


def test_a_badge_escapes_its_label_and_keeps_to_one_line():
    html = badge("<b>paused</b>", Tone.CAUTION)
    assert "&lt;b&gt;paused&lt;/b&gt;" in html and "<b>" not in html
    assert f"background: {Tone.CAUTION}" in html and "white-space: nowrap" in html


def test_a_time_column_shows_its_field_through_when_and_sorts_by_it(settings):
    settings.TIME_ZONE = "Asia/Kolkata"
    column = time_column("created_at")
    row = types.SimpleNamespace(created_at=MOMENT)
    assert column(row) == "2026-11-23 15:45:03 IST"
    assert (column.short_description, column.admin_order_field, column.__name__) == (
        "created at",
        "created_at",
        "created_at",
    )
    assert time_column("expires_at", "expires")(types.SimpleNamespace(expires_at=None)) == "—"
