"""A count with its noun, for what commands and services print: "1 assignment", "2 assignments".

Django's ``ngettext`` picks the form, as the admin's messages do; one function keeps the many
``f"{n} <noun>s"`` lines of the commands from saying "1 days".
"""

from django.utils.translation import ngettext


def quantity(count: int, singular: str, plural: str | None = None) -> str:
    """``count`` and the noun in the form it takes: ``plural`` if given, else ``singular`` + "s"."""
    return f"{count} {ngettext(singular, plural or singular + 's', count)}"
