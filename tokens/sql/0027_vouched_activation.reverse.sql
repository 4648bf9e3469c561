-- Refused while an identity provider vouched for an activation: its history would have to be rewritten.
DO $$
BEGIN
    IF EXISTS (SELECT FROM tokens WHERE consumed_with = 'identity_provider') THEN
        RAISE EXCEPTION 'tokens: % activations were vouched for by an identity provider; the older check cannot hold them',
            (SELECT count(*) FROM tokens WHERE consumed_with = 'identity_provider');
    END IF;
END
$$;
ALTER TABLE tokens DROP CONSTRAINT tokens_consumed_with_check;
ALTER TABLE tokens ADD CONSTRAINT tokens_consumed_with_check CHECK (
    consumed_with IS NULL
    OR (consumed_at IS NOT NULL
        AND (consumed_with IN ('link', 'code') OR (consumed_with = 'password' AND action = 'deletion')))
);
