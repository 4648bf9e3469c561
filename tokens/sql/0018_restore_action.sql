-- A token action of its own for restoring a deprovisioned account: its e-mail goes to the address a
-- deprovisioned account keeps, and its link reprovisions it (0019_deprovisioned.sql keeps its rules).
-- A migration of its own: PostgreSQL lets a transaction use an enum value only after the
-- transaction that added it has committed.
ALTER TYPE token_action ADD VALUE IF NOT EXISTS 'restore';
