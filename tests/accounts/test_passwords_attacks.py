"""Passwords of characters that show nothing yet are neither spaces nor format characters, which the
visible-characters validator (accounts/passwords.py) took for letters: Hangul fillers (letters, Lo),
the braille blank (a symbol, So), the combining grapheme joiner and variation selectors (marks, Mn).
Each renders as nothing, in a password field as anywhere."""

import pytest
from django.core.exceptions import ValidationError

from accounts.passwords import VisibleCharactersValidator, visible_characters

pytestmark = pytest.mark.attack

BLANK = [
    "\u3164" * 10,  # Hangul filler
    "\u115f\u1160" * 5,  # Hangul choseong and jungseong fillers
    "\uffa0" * 10,  # halfwidth Hangul filler
    "\u2800" * 10,  # braille pattern blank
    "\u034f" * 10,  # combining grapheme joiner
    "\ufe0f" * 10,  # variation selector 16
    "\U000e0100" * 10,  # variation selector 17
    "\u17b4\u17b5" * 5,  # Khmer inherent vowels
    "abcdefg" + "\u3164" * 5,  # seven that show
]


@pytest.mark.parametrize("password", BLANK)
def test_a_password_of_blank_letters_symbols_or_marks_is_refused(password):
    with pytest.raises(ValidationError) as refused:
        VisibleCharactersValidator().validate(password)
    assert refused.value.error_list[0].code == "password_too_few_visible_characters"


def test_letters_and_marks_that_show_still_count():
    assert visible_characters("한국어비밀번호") == 7
    assert visible_characters("e\u0301te\u0301") == 5  # an accent on a letter shows with it
