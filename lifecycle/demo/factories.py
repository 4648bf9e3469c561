"""Factories for tests and for the demo data of `make run` (lifecycle/management/commands/seed_demo.py).

Accounts are made through the services, so every one has lived through the real lifecycle:
provisioned by INSERT (its activation token made by the trigger), activated by consuming that
token, suspended, deprovisioned and erased by their services.
"""

import factory

from accounts.erasure import account_erase
from accounts.models import Account, AccountStatus
from accounts.services import account_deprovision, account_provision, account_suspend
from tokens.selectors import live_token
from tokens.services import token_consume


class AccountFactory(factory.django.DjangoModelFactory):
    email = factory.Sequence(lambda n: f"user{n}@example.com")
    login = factory.Sequence(lambda n: f"user{n}")
    status = AccountStatus.PROVISIONED
    # Suspended, deprovisioned and erased accounts were active first, unless this is False.
    was_activated = True

    class Meta:
        model = Account

    class Params:
        active = factory.Trait(status=AccountStatus.ACTIVE)
        suspended = factory.Trait(status=AccountStatus.SUSPENDED)
        deprovisioned = factory.Trait(status=AccountStatus.DEPROVISIONED)
        erased = factory.Trait(status=AccountStatus.ERASED)

    @classmethod
    def _create(cls, model_class, *, email, login, status, was_activated):
        account = account_provision(email=email, login=login, actor=None)
        if status == AccountStatus.PROVISIONED:
            return account
        if status == AccountStatus.ACTIVE or was_activated:
            token_consume(secret=bytes(live_token(account=account).secret), actor=None)
        if status == AccountStatus.SUSPENDED:
            account_suspend(account=account, actor=None)
        if status in (AccountStatus.DEPROVISIONED, AccountStatus.ERASED):
            account_deprovision(account=account, actor=None)
        if status == AccountStatus.ERASED:
            account_erase(account=account, actor=None)
        account.refresh_from_db()
        return account
