"""Staff logins made from the command line (manage.py add_staff): one login in one role, with a password
that is generated, or given and checked by AUTH_PASSWORD_VALIDATORS. Superusers are createsuperuser's."""

import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.base_user import AbstractBaseUser
from django.contrib.auth.models import Group
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from lifecycle.backoffice.roles import ROLES
from platform_events.audit.context import audit_context
from platform_events.db.text import is_utf8

# 24 characters of base64url: 144 random bits, typed or pasted once.
GENERATED_PASSWORD_BYTES = 18


class StaffRefused(Exception):
    """The login cannot be made as asked; the message says why in one sentence."""


def generated_password() -> str:
    return secrets.token_urlsafe(GENERATED_PASSWORD_BYTES)


def staff_add(*, login: str, role: str, password: str, actor, reason: str | None = None) -> AbstractBaseUser:
    """A staff login ``login`` in the group of ``role`` (a name in ROLES) with ``password``; refused with
    one sentence when the login is taken (in any case), not a valid login, or the password too weak.
    Audited (staff_user.created, staff_user.group_added) with ``actor`` (None: the database role) and
    ``reason``."""
    if reason is not None and not _is_text(reason):
        raise StaffRefused("The reason is not valid text (UTF-8, no NUL).")
    with transaction.atomic(), audit_context(actor=actor, reason=reason):
        return _staff_add(login=login, role=role, password=password)


def _is_text(text: str) -> bool:
    """What PostgreSQL's text and a sign-in form take: UTF-8 (a shell's stray bytes are not), no NUL."""
    return "\x00" not in text and is_utf8(text)


def _staff_add(*, login: str, role: str, password: str) -> AbstractBaseUser:
    if role not in ROLES:
        raise StaffRefused(f"No role named {role!r}; the roles are {', '.join(ROLES)}.")
    User = get_user_model()
    user = User(username=login, is_staff=True)
    try:  # first: a login the database cannot hold (a NUL) is not looked up
        user.clean_fields(exclude=["password"])
    except ValidationError as error:
        raise StaffRefused(f"Not a valid login: {' '.join(error.messages)}") from None
    if taken := User.objects.filter(username__iexact=login).first():
        # As the admin's add-user form: logins that differ only in case are one person to a reader.
        raise StaffRefused(
            f"A login named {taken.username!r} exists already; choose another, or change it in the admin."
        )
    if not _is_text(password):
        raise StaffRefused("Password refused: it is not valid text (UTF-8, no NUL), which no sign-in form can type.")
    try:
        validate_password(password, user)  # needs the user: a password like its login is refused
    except ValidationError as error:
        raise StaffRefused(f"Password refused: {' '.join(error.messages)}") from None
    if (group := Group.objects.filter(name=role).first()) is None:  # made by every migrate
        raise StaffRefused(f"The {role} group is missing; manage.py ensure_roles makes it.")
    user.set_password(password)
    user.save()
    user.groups.set([group])
    return user
