"""Node assignment's pages in the back-office (accounts/nodes/admin.py), registered by importing them
here: Django discovers this module only. The account page composes accounts with their tokens, so it
lives in lifecycle/backoffice/accounts.py."""

import accounts.nodes.admin  # noqa: F401
