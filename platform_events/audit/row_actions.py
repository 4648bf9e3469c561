"""The admin kit's row actions, audited: every change a run makes carries the staff member, the
reason asked on the confirmation page and the request (one audit context around the whole run)."""

from platform_events.admin_kit.actions import RowActions
from platform_events.audit.context import audit_context


class AuditedRowActions(RowActions):
    acting = staticmethod(audit_context)
