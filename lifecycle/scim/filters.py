"""A SCIM filter (RFC 7644 §3.4.2.2), parsed by scim2-models, as a query on the accounts a client
may see: each attribute of the mapping (docs/scim.md) to its column, the comparisons to lookups.
A filter is bounded (its length, its number of expressions) so that none is built to be slow; an
attribute the mapping does not hold matches nothing, as the RFC has it."""

from datetime import UTC, datetime

from django.db.models import Q, Value
from django.db.models.functions import Lower
from scim2_models import ScimFilter
from scim2_models.path.expressions import (
    AttrPath,
    CompareOperator,
    Comparison,
    FilterNode,
    LogicalExpr,
    LogicalOperator,
    Not,
    Present,
    ValuePath,
)

from lifecycle.scim.errors import ScimError

LONGEST_FILTER = 1000
MOST_EXPRESSIONS = 20
NOTHING = Q(pk__in=[])

# String attributes: SCIM attribute (lower case) -> its column in lower case (scim_accounts() aliases
# them), the expression the indexes are built on: userName and e-mail addresses are not case-exact
# (RFC 7643 §4.1.1, §4.1.2), nor are the account's.
STRINGS = {"username": "user_name_lower", "emails": "email_lower", "emails.value": "email_lower"}
# externalId is case-exact (RFC 7643 §3.1), compared as it is.
CASE_EXACT = {"externalid": "scim_user__external_id"}
# Always true of the one address an account has: it is its primary, work address.
EMAIL_FACTS = {"emails.type": "work", "emails.primary": True}
DATES = {"meta.created": "created_at", "meta.lastmodified": "last_modified"}

LOOKUPS = {
    CompareOperator.eq: "exact",
    CompareOperator.co: "contains",
    CompareOperator.sw: "startswith",
    CompareOperator.ew: "endswith",
    CompareOperator.gt: "gt",
    CompareOperator.ge: "gte",
    CompareOperator.lt: "lt",
    CompareOperator.le: "lte",
}


def users_filter(expression: str) -> Q:
    """The Q for a ``filter`` of /Users; ScimError 400 invalidFilter for one that cannot be read or is
    too large."""
    if len(expression) > LONGEST_FILTER:
        raise ScimError(400, f"A filter is at most {LONGEST_FILTER} characters long.", "invalidFilter")
    if "\x00" in expression or not _encodable(expression):
        raise ScimError(400, "A filter is Unicode text without NUL characters.", "invalidFilter")
    try:
        node = ScimFilter(expression).ast
    except Exception as error:  # scim2-models' InvalidFilterException, or a value it cannot read
        raise ScimError(400, f"The filter cannot be read: {error}.", "invalidFilter") from None
    if _size(node) > MOST_EXPRESSIONS:
        raise ScimError(400, f"A filter holds at most {MOST_EXPRESSIONS} expressions.", "invalidFilter")
    return _q(node, prefix="")


def _encodable(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return False
    return True


def _size(node: FilterNode) -> int:
    if isinstance(node, LogicalExpr):
        return sum(_size(term) for term in node.terms)
    if isinstance(node, Not):
        return _size(node.expr)
    if isinstance(node, ValuePath):
        return _size(node.val_filter)
    return 1


def _name(path: AttrPath, prefix: str) -> str:
    name = ".".join(part for part in (prefix, path.attr, path.sub_attr) if part).lower()
    return name


def _q(node: FilterNode, *, prefix: str) -> Q:
    if isinstance(node, LogicalExpr):
        terms = [_q(term, prefix=prefix) for term in node.terms]
        combined = terms[0]
        for term in terms[1:]:
            combined = combined & term if node.op == LogicalOperator.and_ else combined | term
        return combined
    if isinstance(node, Not):
        return ~_q(node.expr, prefix=prefix)
    if isinstance(node, ValuePath):
        return _q(node.val_filter, prefix=_name(node.attr_path, prefix))
    if isinstance(node, Present):
        return _present(_name(node.attr_path, prefix))
    if isinstance(node, Comparison):
        return _comparison(_name(node.attr_path, prefix), node.op, node.value)
    raise ScimError(400, f"The filter holds an expression this service does not read: {node}.", "invalidFilter")


def _present(name: str) -> Q:
    if name in CASE_EXACT:
        return Q(**{f"{CASE_EXACT[name]}__isnull": False})
    if name in STRINGS or name in ("username", "active", "id", "meta.created", "meta.lastmodified"):
        return Q()
    if name in EMAIL_FACTS:
        return Q()
    return NOTHING


def _comparison(name: str, op: CompareOperator, value) -> Q:
    if name in STRINGS:
        if not isinstance(value, str):
            raise ScimError(400, f"{name} is compared with a string.", "invalidFilter")
        # Lowered by PostgreSQL, as the indexes are: Python's lower() differs for some letters ("İ").
        column, value = STRINGS[name], Lower(Value(value))
        if op == CompareOperator.ne:
            return ~Q(**{column: value})
        return Q(**{f"{column}__{LOOKUPS[op]}": value})
    if name in CASE_EXACT:
        if not isinstance(value, str):
            raise ScimError(400, f"{name} is compared with a string.", "invalidFilter")
        column = CASE_EXACT[name]
        if op == CompareOperator.ne:
            return ~Q(**{column: value})
        return Q(**{f"{column}__{LOOKUPS[op]}": value})
    if name == "active":
        if not isinstance(value, bool) or op not in (CompareOperator.eq, CompareOperator.ne):
            raise ScimError(400, "active is compared with eq or ne and true or false.", "invalidFilter")
        active = Q(status="active")
        return active if (op == CompareOperator.eq) == value else ~active
    if name == "id":
        if op not in (CompareOperator.eq, CompareOperator.ne):
            raise ScimError(400, "id is compared with eq or ne.", "invalidFilter")
        same = Q(pk=int(value)) if isinstance(value, str) and is_account_id(value) else NOTHING
        return same if op == CompareOperator.eq else ~same
    if name in DATES:
        when = _moment(value, name)
        if op in (CompareOperator.co, CompareOperator.sw, CompareOperator.ew):
            raise ScimError(400, f"{name} is a date: compare it with eq, ne, gt, ge, lt or le.", "invalidFilter")
        column = DATES[name]
        if op == CompareOperator.ne:
            return ~Q(**{column: when})
        return Q(**{column if op == CompareOperator.eq else f"{column}__{LOOKUPS[op]}": when})
    if name in EMAIL_FACTS:
        fact = EMAIL_FACTS[name]
        if op == CompareOperator.eq:
            return Q() if _same(value, fact) else NOTHING
        if op == CompareOperator.ne:
            return NOTHING if _same(value, fact) else Q()
        return NOTHING
    return NOTHING  # an attribute the mapping does not hold (RFC 7644 §3.4.2.2: false)


def is_account_id(text: str) -> bool:
    """Whether ``text`` can be an account's id: ASCII digits ("²" and "٣" are digits to Python too),
    few enough for a bigint."""
    return text.isascii() and text.isdigit() and len(text) < 19


def _same(value, fact) -> bool:
    return value.lower() == fact if isinstance(fact, str) and isinstance(value, str) else value == fact


def _moment(value, name: str) -> datetime:
    try:
        moment = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise ScimError(400, f"{name} is compared with a date such as 2026-01-31T00:00:00Z.", "invalidFilter") from None
    # A date without its zone is read as UTC (RFC 7643 §2.3.5 dates carry one; some clients leave it out).
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)
