-- The clients that hold accounts:delete lose it (audited as api_client.changed); a client that held
-- only it is revoked, since a client holds at least one scope. Then the scopes are those of
-- 0016_client_address_scope.sql again.
UPDATE api_clients SET revoked_at = now(), revoked_reason = 'the scope accounts:delete was withdrawn'
    WHERE scopes = ARRAY['accounts:delete']::text[] AND revoked_at IS NULL;
UPDATE api_clients SET scopes = CASE WHEN scopes = ARRAY['accounts:delete']::text[] THEN ARRAY['accounts:read']::text[]
                                     ELSE array_remove(scopes, 'accounts:delete') END
    WHERE 'accounts:delete' = ANY (scopes);
ALTER TABLE api_clients DROP CONSTRAINT ck_api_clients_scopes;
ALTER TABLE api_clients ADD CONSTRAINT ck_api_clients_scopes CHECK (
    cardinality(scopes) > 0
    AND scopes <@ ARRAY['accounts:read', 'accounts:write', 'sessions', 'sessions:client-address']::text[]
    AND ('sessions' = ANY (scopes) OR NOT 'sessions:client-address' = ANY (scopes)));
