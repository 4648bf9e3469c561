"""The refusals of node assignment (SQLSTATE class LN, accounts/sql/0014_nodes.sql, or the live-row index).

``code`` is tokenserver's own where it has one (invalid-generation, invalid-keysChangedAt,
invalid-client-state), so that the API answers with the code its clients know.
"""

from platform_events.db.refusals import raised_as
from platform_events.refusals import Refused


class NodeError(Refused):
    code = "node-refused"


@raised_as(sqlstate="LN002")
class NoCapacity(NodeError):
    """No node can take the account (tokenserver answers 503), or the named node is full."""

    code = "no-capacity"


@raised_as(sqlstate="LN003")
class UnknownName(NodeError):
    """The service, node or account named does not exist."""

    code = "unknown"


@raised_as(sqlstate="LN004")
class InvalidUpdate(NodeError):
    """A move the assignment rules refuse; ``code`` says which (the database's HINT)."""

    code = "invalid-update"

    @classmethod
    def from_diagnostics(cls, diag) -> "InvalidUpdate":
        return cls(diag.message_primary, code=diag.message_hint)


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


class Retired(NodeError):
    """The account's assignments carry the tombstone generation (tokenserver's retire_user): no client
    of the account is served a node again."""

    code = "assignment-retired"
