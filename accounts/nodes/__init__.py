"""Node assignment (the Mozilla tokenserver model): services, their storage nodes, and each account's
assignment to a node per service. docs/nodes.md; schema in accounts/sql/0014_nodes.sql."""
