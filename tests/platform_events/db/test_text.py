"""What PostgreSQL's text can hold (platform_events/db/text.py)."""

import pytest

from platform_events.db.text import is_utf8


@pytest.mark.parametrize("text", ["reason", "raison d'être", "日本語", ""])
def test_text_that_encodes_as_utf8_is_text(text):
    assert is_utf8(text)


def test_a_command_lines_undecodable_byte_is_not():
    stray = b"why \xff".decode("utf-8", "surrogateescape")  # how Python hands over argv's bad bytes
    assert not is_utf8(stray)
