-- The scope scim: a client holding it (an identity provider) reads, creates, changes, deactivates and
-- deletes accounts through /scim/v2/ (docs/scim.md). It stands alone, as accounts:delete does.
ALTER TABLE api_clients DROP CONSTRAINT ck_api_clients_scopes;
ALTER TABLE api_clients ADD CONSTRAINT ck_api_clients_scopes CHECK (
    cardinality(scopes) > 0
    AND scopes <@ ARRAY['accounts:read', 'accounts:write', 'accounts:delete', 'accounts:erase', 'sessions',
                        'sessions:client-address', 'scim']::text[]
    AND ('sessions' = ANY (scopes) OR NOT 'sessions:client-address' = ANY (scopes)));
