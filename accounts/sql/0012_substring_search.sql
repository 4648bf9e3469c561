-- The back-office finds accounts by a middle part of an e-mail or login too (issue 11): a domain
-- (example.com, @example), or "ane" in jane. 0004's text_pattern_ops indexes serve only = and a
-- prefix; a LIKE '%term%' on 1,000,000 accounts was a sequential scan (the stock admin's 456 ms).
-- Trigram GIN indexes serve it. pg_trgm ships with PostgreSQL (contrib) and is a trusted extension
-- since PostgreSQL 13: the database's owner, who runs the migrations, may create it; the runtime
-- role's queries use only the core LIKE operator, which these indexes serve without any grant.
-- A trigram index needs 3 characters of a word to narrow anything: shorter terms are searched by
-- prefix only (accounts/selectors.py).
CREATE EXTENSION IF NOT EXISTS pg_trgm;

CREATE INDEX accounts_email_trgm_idx ON accounts USING gin (lower(email) gin_trgm_ops);
CREATE INDEX accounts_login_trgm_idx ON accounts USING gin (lower(login) gin_trgm_ops);
