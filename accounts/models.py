"""Accounts, mapped onto the trigger-managed table of accounts/sql/0001_accounts.sql.

The table is the source of truth: ``managed = False``, and the fields with a database default
carry ``db_default`` so that Django leaves them to the database on insert. Change an account's
state through accounts/services.py, never by saving a model.
"""

from django.db import models
from django.db.models.functions import Now


class AccountStatus(models.TextChoices):
    PROVISIONED = "provisioned"
    ACTIVE = "active"
    SUSPENDED = "suspended"


class Account(models.Model):
    id = models.BigAutoField(primary_key=True)
    email = models.CharField(max_length=254)
    status = models.CharField(max_length=11, choices=AccountStatus, db_default=AccountStatus.PROVISIONED)
    login = models.CharField(max_length=254)
    created_at = models.DateTimeField(db_default=Now())
    status_changed_at = models.DateTimeField(null=True, blank=True)
    activated_at = models.DateTimeField(null=True, blank=True)
    suspended_at = models.DateTimeField(null=True, blank=True)
    unsuspended_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        managed = False
        db_table = "accounts"
        ordering = ["-id"]
        permissions = [
            ("suspend_account", "Can suspend and unsuspend accounts"),
            ("resend_activation", "Can resend activation e-mails"),
            ("send_password_recovery", "Can send password-recovery e-mails"),
        ]

    # An account acting on itself is audited as account:<id>, apart from staff:<id> (platform_events/audit.py).
    audit_kind = "account"

    def __str__(self):
        return f"{self.login} <{self.email}>"

    def get_username(self) -> str:
        """The name the audit trail shows for this account when it acts (``actor_display``)."""
        return self.login
