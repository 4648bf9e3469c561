"""The client API's request and response bodies (pydantic, through django-ninja): what the OpenAPI
schema at /api/v1/openapi.json says, and what every request is checked against before a service runs."""

import ipaddress
from datetime import datetime
from typing import Annotated, Literal

from ninja import Schema
from pydantic import AfterValidator, ConfigDict, Field

from accounts.nodes.models import MAX_GENERATION, SERVICE_NAME, SERVICE_NAME_MAX

# Logins and addresses are at most 254 characters (accounts/sql/0007_address_rules.sql).
LONGEST_NAME = 254
# The largest id PostgreSQL's bigint holds: a larger one names nobody, and must not reach SQL.
LARGEST_ID = 2**63 - 1


def _storable(text: str) -> str:
    """Text PostgreSQL can hold: UTF-8 (JSON may carry a lone surrogate, \\ud800) and no NUL."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("must be valid Unicode text (no lone surrogates)") from None
    if "\x00" in text:
        raise ValueError("must not hold a NUL character")
    return text


Text = Annotated[str, AfterValidator(_storable)]

# The longest an IP address is written: eight groups of four hex digits, the last two as IPv4 (45).
LONGEST_ADDRESS = len("ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255")


def _ip_address(text: str) -> str:
    """An IPv4 or IPv6 address, as Python writes it ("2001:db8::7"); no IPv6 zone ("%eth0"), which
    names an interface of the caller's host, not a client."""
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        raise ValueError("must be an IPv4 or IPv6 address") from None
    if getattr(address, "scope_id", None):
        raise ValueError("must be an IP address without a zone (%...)")
    return str(address)


# accounts.models.AccountStatus (a test holds the two together).
Status = Literal["provisioned", "active", "suspended", "deprovisioned", "erased"]


# The forms accounts/sql/0007_address_rules.sql accepts, as far as a pattern can say it (the database
# also refuses a domain label over 63 characters and RFC 2047 encoded words: 422 invalid-email).
EMAIL_PATTERN = (
    r"^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+$"
)
LOGIN_PATTERN = r"^[A-Za-z0-9]([A-Za-z0-9._+-]*[A-Za-z0-9])?$"


NOT_BLANK = r"\S"
IDENTIFIER_PATTERN = r"^[!-~]+$"


class Body(Schema):
    # A misspelt field is refused, not ignored.
    model_config = ConfigDict(extra="forbid")


def _documented(pattern: str) -> dict:
    """A text field's form for the OpenAPI schema only: the database's address rules check it, and
    refuse it with the public pages' sentence (422 invalid-email, invalid-login), not this pattern."""
    return {"minLength": 1, "maxLength": LONGEST_NAME, "pattern": pattern}


class ProvisionIn(Body):
    email: Text = Field(json_schema_extra=_documented(EMAIL_PATTERN), examples=["ada@example.com"])
    login: Text = Field(json_schema_extra=_documented(LOGIN_PATTERN), examples=["ada"])
    password: Text | None = Field(
        default=None,
        min_length=1,
        max_length=4096,
        description="Optional: the account's password (Django's validators apply). Without one, the"
        " person chooses it when they activate.",
    )


class EmailChangeIn(Body):
    email: Text = Field(
        json_schema_extra=_documented(EMAIL_PATTERN),
        examples=["ada.new@example.com"],
        description="The new address: it receives a link, and becomes the account's once the link is used.",
    )


class ReasonIn(Body):
    reason: Text = Field(
        min_length=1,
        max_length=1000,
        pattern=NOT_BLANK,
        description="Why: kept in the audit trail.",
        examples=["chargeback"],
    )


class SessionIn(Body):
    # Logins and addresses are printable ASCII (accounts/sql/0007_address_rules.sql): other text names
    # nobody, and is refused before any lookup (its case would fold differently in Python and SQL).
    identifier: Text = Field(
        min_length=1,
        max_length=LONGEST_NAME,
        pattern=IDENTIFIER_PATTERN,
        description="The login or the e-mail address.",
    )
    password: Text = Field(min_length=1, max_length=4096)
    client_address: Annotated[str, AfterValidator(_ip_address)] | None = Field(
        default=None,
        max_length=LONGEST_ADDRESS,
        description="Optional, from a client with the scope sessions:client-address (any other is refused"
        " with 403 insufficient-scope): the IP address the person signs in from, as the calling service saw"
        " it. Failures are then also counted per name and address (an IPv6 /64 as one address), and an"
        " address that has not failed on a name gets through that name's delays (up to a number of such"
        " failures an hour).",
        examples=["203.0.113.7", "2001:db8::7"],
    )


# What accounts/sql/0014_nodes.sql holds: a service's name (the rule the services check, anchored for
# the OpenAPI document), a client state (hex of at most 16 bytes), and generations below the tombstone
# (MAX_GENERATION: a client reaching it would retire itself).
SERVICE_PATTERN = f"^{SERVICE_NAME.pattern}$"
CLIENT_STATE_PATTERN = r"^([0-9a-f]{2}){0,16}$"
LARGEST_GENERATION = MAX_GENERATION - 1

# What each pattern a request is checked against asks, in words: a refusal says this, never the
# pattern (lifecycle/api/validation.py; a test holds every constrained field to one of these).
PATTERN_SENTENCES = {
    NOT_BLANK: "must not be blank",
    IDENTIFIER_PATTERN: "must be a login or an e-mail address: printable ASCII, without spaces",
    SERVICE_PATTERN: (
        f"must be a service's name: a lower-case letter or digit, then up to {SERVICE_NAME_MAX - 1} more of"
        " a-z, 0-9, '.', '_' and '-'"
    ),
    CLIENT_STATE_PATTERN: "must be lower-case hex of at most 16 bytes (32 digits)",
}


class NodeReportIn(Body):
    """What a client's credentials say (tokenserver's token request: the generation, keys_changed_at
    and client state of its FxA credentials). Each may be left out; 0 is "not reported", as in
    tokenserver."""

    # strict: "5" or true is not a number here (pydantic would take them).
    generation: int | None = Field(
        default=None,
        ge=0,
        le=LARGEST_GENERATION,
        strict=True,
        description="The credentials' generation (milliseconds): never below the account's.",
        examples=[1700000000000],
    )
    keys_changed_at: int | None = Field(
        default=None,
        ge=0,
        le=LARGEST_ID,
        strict=True,
        description="When the keys last changed (FxA's milliseconds): never below the account's, and"
        " not above generation when it moves.",
        examples=[1700000000000],
    )
    client_state: str | None = Field(
        default=None,
        max_length=32,
        pattern=CLIENT_STATE_PATTERN,
        description="Hex (lowercase) of the hash of the client's sync key, at most 16 bytes. A new one"
        " replaces the assignment (same node, new row); one used before is refused. Left out: the"
        " current one.",
        examples=["0a1b2c3d4e5f60718293a4b5c6d7e8f9"],
    )


class AssignmentOut(Schema):
    """An account's node assignment for a service (tokenserver's user record). ``node`` and ``uid`` are
    null when the account has no live assignment on a node (its node was unassigned or removed): the
    next PUT gives it one, keeping its keys."""

    service: str
    account_id: int
    node: str | None = Field(description="The node's URL.")
    uid: int | None = Field(description="The assignment's id (tokenserver's uid), which the node's URL pattern takes.")
    generation: int
    keys_changed_at: int | None
    client_state: str
    first_seen_at: datetime = Field(description="When the account was first assigned for this service.")


class AccountOut(Schema):
    id: int
    email: str | None = Field(description="Its address; null once the account is erased.")
    login: str | None = Field(description="Its login; null once the account is erased.")
    status: Status
    created_at: datetime
    status_changed_at: datetime | None
    activated_at: datetime | None
    suspended_at: datetime | None
    unsuspended_at: datetime | None
    deprovisioned_at: datetime | None = Field(description="When it was last deprovisioned.")
    reprovisioned_at: datetime | None = Field(description="When it was last reprovisioned.")


class AccountListOut(Schema):
    items: list[AccountOut]


class MailOut(Schema):
    """An e-mail queued for the account: the mailroom sends it. Its link and code are never shown here."""

    account_id: int
    action: Literal["activation", "password_recovery", "email_change"]
    expires_at: datetime


class SessionOut(Schema):
    account_id: int
    status: Status


class ProblemOut(Schema):
    """RFC 9457 problem details; ``type`` is stable, one per kind of refusal (GET it for its title)."""

    type: str = Field(examples=["/api/v1/problems/login-taken"])
    title: str
    status: int
    detail: str


class ProblemTypeOut(Schema):
    type: str
    status: int
    title: str
