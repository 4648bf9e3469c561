-- Every token has its secret's digest (tokens/migrations/0016 filled in the older rows): links are
-- found by it, one token per digest.
ALTER TABLE tokens ALTER COLUMN secret_digest SET NOT NULL;
CREATE UNIQUE INDEX tokens_secret_digest_key ON tokens (secret_digest);
