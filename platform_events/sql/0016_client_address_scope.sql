-- The scope sessions:client-address: a client holding it may say, with a password check, the address
-- of the person signing in (docs/api.md, "Password check"); failures are then counted per name and
-- address. It adds to sessions and means nothing without it, so a client never holds it alone.
ALTER TABLE api_clients DROP CONSTRAINT ck_api_clients_scopes;
ALTER TABLE api_clients ADD CONSTRAINT ck_api_clients_scopes CHECK (
    cardinality(scopes) > 0
    AND scopes <@ ARRAY['accounts:read', 'accounts:write', 'sessions', 'sessions:client-address']::text[]
    AND ('sessions' = ANY (scopes) OR NOT 'sessions:client-address' = ANY (scopes)));
