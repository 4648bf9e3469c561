-- The last state of an account's lifecycle: deprovisioned (docs/lifecycle.md, "Deprovisioning").
-- A migration of its own: PostgreSQL lets a transaction use an enum value only after the
-- transaction that added it has committed (0021_deprovision.sql keeps its rules).
ALTER TYPE account_status ADD VALUE IF NOT EXISTS 'deprovisioned';
