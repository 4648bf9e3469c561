-- A signed-in person deletes their account from the account page (docs/public-pages.md, "Your
-- account"): the password, asked again, confirms the request instead of a link mailed to the address.
-- The page issues a deletion token and consumes it in the same transaction, consumed_with 'password',
-- so that the deletion runs the rules every deletion runs (0021_deletion.sql: deprovisioned as the
-- person, the restore token issued) and the restore e-mail says it was the person's request. Only a
-- deletion token is consumed so: a password confirms nothing else.
ALTER TABLE tokens DROP CONSTRAINT tokens_consumed_with_check;
ALTER TABLE tokens ADD CONSTRAINT tokens_consumed_with_check CHECK (
    consumed_with IS NULL
    OR (consumed_at IS NOT NULL
        AND (consumed_with IN ('link', 'code') OR (consumed_with = 'password' AND action = 'deletion')))
);
