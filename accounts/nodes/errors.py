"""The refusals of node assignment (SQLSTATE class LN, accounts/sql/0014_nodes.sql, or the live-row index).

A refused client report says tokenserver's own code too (invalid-generation, invalid-keysChangedAt,
invalid-client-state: ``tokenserver_code``), which the client API answers beside its problem type,
so that a client ported from tokenserver branches on the code it knows.
"""

from platform_events.db.refusals import raised_as
from platform_events.refusals import Refused


class NodeError(Refused):
    code = "node-refused"


@raised_as(sqlstate="LN002")
class NoCapacity(NodeError):
    """No node can take the account (tokenserver answers 503), or the named node is full."""

    code = "no-capacity"
    status = 503
    retry_after = 300  # an operator must add a node or release capacity: minutes, not seconds


@raised_as(sqlstate="LN003")
class UnknownName(NodeError):
    """The service, node or account named does not exist."""

    code = "unknown"


@raised_as(sqlstate="LN004")
class InvalidUpdate(NodeError):
    """A move the assignment rules refuse. A refused client report is one of the subclasses below,
    whose tokenserver code the database names in its HINT; a move no client reports (a node changed,
    a replacement undone) is this class, which tokenserver has no code for."""

    code = "invalid-update"
    tokenserver_code: str | None = None

    @classmethod
    def from_diagnostics(cls, diag) -> "InvalidUpdate":
        kind = next((sub for sub in cls.__subclasses__() if sub.tokenserver_code == diag.message_hint), cls)
        return kind(diag.message_primary)


class InvalidGeneration(InvalidUpdate):
    """A generation below the one the account has reached."""

    code = "invalid-generation"
    tokenserver_code = "invalid-generation"


class InvalidKeysChangedAt(InvalidUpdate):
    """A keys_changed_at that goes backwards, passes the generation, or is left out once the account has one."""

    code = "invalid-keys-changed-at"
    tokenserver_code = "invalid-keysChangedAt"


# A number from the future is refused before it is kept: it never goes backwards, so one far ahead
# (2^63-2) would refuse the account's real client until an operator's reset. 422: the report itself is wrong, whatever
# the account's history. Subclasses of tokenserver's kinds, so a ported client reads its code.


class GenerationInFuture(InvalidGeneration):
    """A generation more than NODE_CLOCK_MARGIN_SECONDS ahead of the clock."""

    code = "generation-in-future"
    status = 422


class KeysChangedAtInFuture(InvalidKeysChangedAt):
    """A keys_changed_at more than NODE_CLOCK_MARGIN_SECONDS ahead of the clock."""

    code = "keys-changed-at-in-future"
    status = 422


class TooManyKeyChanges(NodeError):
    """More new client states for one account and service in the last hour than
    NODE_KEY_CHANGES_PER_HOUR; ``retry_after`` says when the oldest of them leaves the hour."""

    code = "too-many-key-changes"
    status = 429


class InvalidClientState(InvalidUpdate):
    """A client_state used before, emptied, or new without new keys."""

    code = "invalid-client-state"
    tokenserver_code = "invalid-client-state"


@raised_as(constraint="node_assignments_live_key", message="nodes: the account already has a live assignment")
class AlreadyAssigned(NodeError):
    code = "already-assigned"


@raised_as(constraint="nodes_service_node_key", message="nodes: the service already has a node of that name")
class NodeExists(NodeError):
    code = "node-exists"


@raised_as(constraint="services_service_key", message="nodes: a service of that name exists")
class ServiceExists(NodeError):
    code = "service-exists"


class InvalidValue(NodeError):
    """A name or number the nodes tables would refuse (accounts/sql/0014_nodes.sql's checks), said
    before the database is asked, in a sentence an operator can act on."""

    code = "invalid-value"


class NoAssignment(NodeError):
    """The account never had an assignment for the service: nothing to reset."""

    code = "no-assignment"
    status = 404


class Retired(NodeError):
    """The account's assignments carry the tombstone generation (tokenserver's retire_user): no client
    of the account is served a node again."""

    code = "assignment-retired"
    status = 410
