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
    # The reversible end of the lifecycle (docs/rules.md, "Deprovisioning"): only reprovisioning leaves it.
    DEPROVISIONED = "deprovisioned"
    # The final end (docs/rules.md, "Erasure"): the row stays, without address, login or password.
    ERASED = "erased"


class Account(models.Model):
    id = models.BigAutoField(primary_key=True)
    # None once the account is erased, and only then.
    email = models.CharField(max_length=254, null=True)
    status = models.CharField(max_length=13, choices=AccountStatus, db_default=AccountStatus.PROVISIONED)
    login = models.CharField(max_length=254, null=True)
    created_at = models.DateTimeField(db_default=Now())
    status_changed_at = models.DateTimeField(null=True, blank=True)
    activated_at = models.DateTimeField(null=True, blank=True)
    suspended_at = models.DateTimeField(null=True, blank=True)
    unsuspended_at = models.DateTimeField(null=True, blank=True)
    deprovisioned_at = models.DateTimeField(null=True, blank=True)
    reprovisioned_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        managed = False
        db_table = "accounts"
        ordering = ["-id"]
        permissions = [
            ("suspend_account", "Can suspend and unsuspend accounts"),
            ("resend_activation", "Can resend activation e-mails"),
            ("send_password_recovery", "Can send password-recovery e-mails"),
            ("deprovision_account", "Can deprovision accounts"),
            ("reprovision_account", "Can reprovision deprovisioned accounts"),
            ("erase_account", "Can erase deprovisioned accounts"),
        ]

    # An account acting on itself is audited as account:<id>, apart from staff:<id> (platform_events/audit/context.py).
    audit_kind = "account"

    def __str__(self):
        if self.status == AccountStatus.ERASED:
            return f"account #{self.pk} (erased)"
        return f"{self.login} <{self.email}>"

    def get_username(self) -> str:
        """The name the audit trail shows for this account when it acts (``actor_display``)."""
        return self.login or str(self)

    @property
    def masked_email(self) -> str:
        """The address as a page shown to a link's holder prints it: enough to recognise, not to harvest
        ("j•••e@example.com")."""
        local, _, domain = self.email.rpartition("@")
        shown = local[0] + "•••" + local[-1] if len(local) > 2 else local[:1] + "•••"
        return f"{shown}@{domain}"


class AccountPassword(models.Model):
    """An account's password, as a Django password hash only (accounts/sql/0011_passwords.sql).

    Kept apart from accounts so that no admin page, audit row or log of an account ever holds it;
    set it through accounts/services.py (account_set_password), which hashes.
    """

    account = models.OneToOneField(
        Account, primary_key=True, on_delete=models.DO_NOTHING, db_column="account", related_name="password"
    )
    password = models.CharField(max_length=128)
    changed_at = models.DateTimeField(db_default=Now())

    class Meta:
        managed = False
        db_table = "account_passwords"

    def __str__(self):
        return f"password of account {self.account_id}"


# Node assignment lives in its own sub-package; Django finds an app's models here.
class ScimUser(models.Model):
    """An account an identity provider created through SCIM (accounts/sql/0026_scim_users.sql): the API
    client whose User it is, for good, and the userName and externalId that client gave it. The
    account's login is the userName when that is a valid login (lifecycle/scim/provisioning.py)."""

    account = models.OneToOneField(
        Account, on_delete=models.DO_NOTHING, db_column="account", primary_key=True, related_name="scim_user"
    )
    client = models.ForeignKey(
        "platform_events.ApiClient", on_delete=models.DO_NOTHING, db_column="client", related_name="scim_users"
    )
    user_name = models.CharField(max_length=254)
    external_id = models.CharField(max_length=254, null=True, blank=True)
    # When the client deleted the User (its account deprovisioned); None again once reprovisioned.
    deleted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(db_default=Now())
    updated_at = models.DateTimeField(db_default=Now())

    class Meta:
        managed = False
        db_table = "scim_users"

    def __str__(self):
        return f"User {self.user_name} of client {self.client_id}"


class AccountDailyCount(models.Model):
    """Sign-ups and activations of one day that is over, in one time zone, as the dashboard's chart
    shows them (accounts/daily_counts.py)."""

    id = models.BigAutoField(primary_key=True)
    zone = models.TextField()
    day = models.DateField()
    signups = models.IntegerField()
    activations = models.IntegerField()
    counted_at = models.DateTimeField(db_default=Now())

    class Meta:
        managed = False
        db_table = "account_daily_counts"

    def __str__(self):
        return f"{self.day} ({self.zone}): {self.signups} sign-ups, {self.activations} activations"


from accounts.nodes.models import Node, NodeAssignment, Service  # noqa: E402, F401


class SessionEnd(models.TextChoices):
    """Why an end user's session ended (accounts/sql/0025_account_sessions.sql)."""

    SIGN_OUT = "sign-out", "signed out"
    PASSWORD = "password", "password changed"
    SUSPENDED = "suspended", "account suspended"
    DEPROVISIONED = "deprovisioned", "account deprovisioned"
    ADDRESS = "address", "address change undone"


class AccountSession(models.Model):
    """One sign-in of an end user on the account pages (accounts/sessions.py): the browser holds the
    secret, this row its SHA-256. The database keeps the rules: only an active account signs in, a
    session ends once and is never rewritten, and leaving the active state or a new password ends it."""

    id = models.BigAutoField(primary_key=True)
    account = models.ForeignKey(Account, on_delete=models.DO_NOTHING, db_column="account", related_name="sessions")
    secret_digest = models.BinaryField(max_length=32)
    # When the password the sign-in checked was set: the database refuses the session if it changed since.
    password_changed_at = models.DateTimeField()
    signed_in_at = models.DateTimeField(db_default=Now())
    expires_at = models.DateTimeField()
    ended_at = models.DateTimeField(null=True, blank=True)
    ended_by = models.CharField(max_length=16, choices=SessionEnd, null=True, blank=True)
    client_address = models.GenericIPAddressField(null=True, blank=True)
    user_agent = models.CharField(max_length=256, blank=True, default="")

    class Meta:
        managed = False
        db_table = "account_sessions"
        ordering = ["-signed_in_at", "-id"]

    def __str__(self):
        return f"session {self.pk} of account {self.account_id}"
