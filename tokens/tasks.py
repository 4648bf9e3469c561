"""django-q2 tasks (scheduled by tokens/migrations/0003_mailroom_schedule.py)."""

from tokens.mailroom.drain import drain


def drain_mailroom() -> str:
    return drain().summary()
