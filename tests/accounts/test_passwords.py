"""The visible-characters password validator (accounts/passwords.py), alone and as the settings apply it."""

import pytest
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError

from accounts.passwords import VisibleCharactersValidator, visible_characters

INVISIBLE = [
    " " * 10,
    "\t" * 10,
    "\u200b" * 10,  # zero-width space
    "\u3000" * 10,  # ideographic space
    "\u00a0" * 10,  # no-break space
    "\u200d\u2060\ufeff" * 4,  # zero-width joiner, word joiner, byte-order mark
    "abc" + " " * 10,  # padding does not make a password longer
    "\u200ba\u200bb\u200bc\u200bd\u200be\u200bf\u200bg",  # seven that show
]


@pytest.mark.parametrize("password", INVISIBLE)
def test_a_password_with_fewer_than_eight_characters_that_show_is_refused(password):
    with pytest.raises(ValidationError) as refused:
        VisibleCharactersValidator().validate(password)
    assert refused.value.error_list[0].code == "password_too_few_visible_characters"
    assert "fewer than 8 visible characters" in refused.value.messages[0]


@pytest.mark.parametrize("password", ["correct horse battery", "Zyx!kv93q", "пароль-надёжный", "éàü€ßøñç"])
def test_a_password_of_eight_visible_characters_or_more_passes(password):
    VisibleCharactersValidator().validate(password)


def test_spaces_are_not_counted_and_letters_of_every_script_are():
    assert visible_characters("a b\u3000c\u200bd") == 4
    assert visible_characters("日本語のパス") == 6


@pytest.mark.parametrize("password", INVISIBLE[:6])
def test_the_settings_apply_it_to_every_password(password):
    """Sign-up, the API, recovery and add_staff all go through AUTH_PASSWORD_VALIDATORS."""
    with pytest.raises(ValidationError):
        validate_password(password)
