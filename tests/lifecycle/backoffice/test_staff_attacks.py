"""manage.py add_staff (lifecycle/backoffice/staff.py) given what a shell can pass: a NUL, or bytes that
are not UTF-8 (which reach Python as lone surrogates), in the login, the reason or the password. Each
is one sentence that makes nothing, not a database or encoding traceback."""

import io

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

pytestmark = [pytest.mark.attack, pytest.mark.django_db]


@pytest.mark.parametrize(
    ("args", "stdin", "sentence"),
    [
        (["fay\x00wong"], None, "Not a valid login: Enter a valid username."),
        (["fay\udcffwong"], None, "Not a valid login: Enter a valid username."),
        (["fay.wong", "--reason", "on call\udcff"], None, "The reason is not valid text (UTF-8, no NUL)."),
        (["fay.wong", "--reason", "on\x00call"], None, "The reason is not valid text (UTF-8, no NUL)."),
        (["fay.wong", "--password-stdin"], "a long Passphrase \udcff 7\n", "Password refused: it is not valid text"),
        (["fay.wong", "--password-stdin"], "a long Passphrase \x00 7\n", "Password refused: it is not valid text"),
    ],
)
def test_text_a_database_cannot_hold_is_one_sentence_and_makes_nothing(args, stdin, sentence):
    with pytest.raises(CommandError) as refused:
        call_command(
            "add_staff",
            *args,
            "--role",
            "support",
            stdout=io.StringIO(),
            stderr=io.StringIO(),
            stdin=io.StringIO(stdin or ""),
        )
    assert str(refused.value).startswith(sentence)
    assert not get_user_model().objects.exists()
