"""No admin here: the audit trail's admin is lifecycle/admin.py.

It shows each row's account by login and e-mail and finds an account's trail, so it reads accounts,
which this bottom layer never imports (README, "Layout").
"""
