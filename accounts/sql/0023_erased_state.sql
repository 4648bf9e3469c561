-- The very end of an account's lifecycle: erased (docs/rules.md, "Erasure"). A migration of its own:
-- PostgreSQL lets a transaction use an enum value only after the transaction that added it has
-- committed (0024_erasure.sql keeps its rules).
ALTER TYPE account_status ADD VALUE IF NOT EXISTS 'erased';
