-- Refused while a deletion was confirmed by password: its history would have to be rewritten.
DO $$
BEGIN
    IF EXISTS (SELECT FROM tokens WHERE consumed_with = 'password') THEN
        RAISE EXCEPTION 'tokens: % deletions were confirmed by password; the older check cannot hold them',
            (SELECT count(*) FROM tokens WHERE consumed_with = 'password');
    END IF;
END
$$;
ALTER TABLE tokens DROP CONSTRAINT tokens_consumed_with_check;
ALTER TABLE tokens ADD CONSTRAINT tokens_consumed_with_check
    CHECK (consumed_with IS NULL OR (consumed_with IN ('link', 'code') AND consumed_at IS NOT NULL));
