-- The scope accounts:delete: a client holding it may deprovision accounts (docs/api.md,
-- "Deprovision an account"). It stands alone: accounts:write does not include it.
ALTER TABLE api_clients DROP CONSTRAINT ck_api_clients_scopes;
ALTER TABLE api_clients ADD CONSTRAINT ck_api_clients_scopes CHECK (
    cardinality(scopes) > 0
    AND scopes <@ ARRAY['accounts:read', 'accounts:write', 'accounts:delete', 'sessions',
                        'sessions:client-address']::text[]
    AND ('sessions' = ANY (scopes) OR NOT 'sessions:client-address' = ANY (scopes)));
