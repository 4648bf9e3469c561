"""The back-office pages that compose several apps, registered by importing them here (Django
discovers this module): the account page, with its tokens and node assignments
(lifecycle/backoffice/accounts.py), the audit trail, which names the accounts its rows are about
(lifecycle/audit_trail/admin.py), and the staff logins' pages, which say what each role may do
(lifecycle/backoffice/staff_admin.py)."""

import lifecycle.audit_trail.admin  # noqa: F401
import lifecycle.backoffice.accounts  # noqa: F401
import lifecycle.backoffice.staff_admin  # noqa: F401
