-- A token action of its own for a person's request to delete their account: its e-mail goes to the
-- account's address, and its link deprovisions the account (0021_deletion.sql keeps its rules). A
-- migration of its own: PostgreSQL lets a transaction use an enum value only after the transaction
-- that added it has committed.
ALTER TYPE token_action ADD VALUE IF NOT EXISTS 'deletion';
