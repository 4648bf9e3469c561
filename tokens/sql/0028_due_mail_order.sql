-- The claim's whole order, (expires_at, id), read from the index: a batch costs its own rows even when
-- thousands of tokens share one expiry (made in one transaction, whose now() they share), where an index
-- on expires_at alone had the claim read and sort every token of that expiry for each batch.
DROP INDEX tokens_due_mail_idx;
CREATE INDEX tokens_due_mail_idx ON tokens (expires_at, id) WHERE mail_state IN ('queued', 'retrying');
