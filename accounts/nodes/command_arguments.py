"""What the node commands' arguments name (accounts/management/commands/), each refused with a sentence."""

from django.core.management.base import CommandError

from accounts.selectors import accounts_by_reference


def account_id_named(reference: str) -> int:
    """The one account that an id, a login or an e-mail names."""
    found = list(accounts_by_reference(reference).order_by("pk").values_list("pk", flat=True)[:10])
    if not found:
        raise CommandError(f"No account is named {reference!r} (give an account id, a login or an e-mail).")
    if len(found) > 1:
        ids = ", ".join(map(str, found))
        raise CommandError(f"{reference!r} names more than one account (ids {ids}); name one by its id or login.")
    return found[0]
