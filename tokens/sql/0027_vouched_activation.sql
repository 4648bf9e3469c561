-- An account an identity provider creates as active (docs/scim.md): the provider vouched for the
-- person, so no activation e-mail is sent. The service issues the account's activation token and
-- consumes it in the same transaction, consumed_with 'identity_provider', so that the activation runs
-- the rules every activation runs (the address claimed, the trail and the outbox written by the
-- account triggers) and the trail says how it was made. Only an activation token is consumed so.
ALTER TABLE tokens DROP CONSTRAINT tokens_consumed_with_check;
ALTER TABLE tokens ADD CONSTRAINT tokens_consumed_with_check CHECK (
    consumed_with IS NULL
    OR (consumed_at IS NOT NULL
        AND (consumed_with IN ('link', 'code')
             OR (consumed_with = 'password' AND action = 'deletion')
             OR (consumed_with = 'identity_provider' AND action = 'activation')))
);
