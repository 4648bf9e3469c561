-- Token actions of their own for a change of address (0026 keeps their rules): email_change, mailed to
-- the new address, whose link makes it the account's; email_change_undo, mailed to the old address,
-- whose link puts it back. A migration of its own: PostgreSQL lets a transaction use an enum value
-- only after the transaction that added it has committed.
ALTER TYPE token_action ADD VALUE IF NOT EXISTS 'email_change';
ALTER TYPE token_action ADD VALUE IF NOT EXISTS 'email_change_undo';
