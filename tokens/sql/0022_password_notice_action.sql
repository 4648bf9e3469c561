-- A token action of its own for the notice "your password was changed": mailed to the account's
-- address by the mailroom, like every e-mail to an account, so that it goes out once (0023 keeps its
-- rules). A migration of its own: PostgreSQL lets a transaction use an enum value only after the
-- transaction that added it has committed.
ALTER TYPE token_action ADD VALUE IF NOT EXISTS 'password_changed';
