"""A password validator (AUTH_PASSWORD_VALIDATORS) for what Django's own do not see: characters
nobody can see. Ten spaces, zero-width spaces or ideographic spaces pass a length check, yet are a
password anyone can guess and nobody can read back from a password manager's field."""

import unicodedata

from django.core.exceptions import ValidationError
from django.utils.translation import ngettext

# Separators (spaces of every width), and control and format characters (zero-width spaces and joiners,
# direction marks): none of them shows.
INVISIBLE_CATEGORIES = {"Zs", "Zl", "Zp", "Cc", "Cf"}
# ... and what shows nothing in other categories: Unicode's default-ignorable code points that are
# letters or marks (the Hangul fillers, the combining grapheme joiner, the Khmer inherent vowels, the
# Mongolian and other variation selectors; DerivedCoreProperties.txt), and the braille pattern blank.
BLANK_RANGES = (
    (0x034F, 0x034F),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x2800, 0x2800),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFFA0, 0xFFA0),
    (0xE0100, 0xE01EF),
)


def _shows(character: str) -> bool:
    if character.isspace() or unicodedata.category(character) in INVISIBLE_CATEGORIES:
        return False
    point = ord(character)
    return not any(low <= point <= high for low, high in BLANK_RANGES)


def visible_characters(password: str) -> int:
    return sum(1 for character in password if _shows(character))


class VisibleCharactersValidator:
    """At least ``min_length`` characters that show; spaces between words are welcome beyond them."""

    def __init__(self, min_length: int = 8):
        self.min_length = min_length

    def validate(self, password: str, user=None) -> None:
        if visible_characters(password) < self.min_length:
            raise ValidationError(
                ngettext(
                    "This password has fewer than %(min_length)d visible character (spaces and invisible"
                    " characters do not count).",
                    "This password has fewer than %(min_length)d visible characters (spaces and invisible"
                    " characters do not count).",
                    self.min_length,
                ),
                code="password_too_few_visible_characters",
                params={"min_length": self.min_length},
            )

    def get_help_text(self) -> str:
        return f"Your password must contain at least {self.min_length} characters that are not spaces."
