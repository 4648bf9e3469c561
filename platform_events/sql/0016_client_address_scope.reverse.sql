-- The clients that hold sessions:client-address lose it (audited as api_client.changed), then the
-- scopes are the three of 0013_api.sql again.
UPDATE api_clients SET scopes = array_remove(scopes, 'sessions:client-address')
    WHERE 'sessions:client-address' = ANY (scopes);
ALTER TABLE api_clients DROP CONSTRAINT ck_api_clients_scopes;
ALTER TABLE api_clients ADD CONSTRAINT ck_api_clients_scopes CHECK (
    cardinality(scopes) > 0 AND scopes <@ ARRAY['accounts:read', 'accounts:write', 'sessions']::text[]);
