-- Refused while a client holds the scope: taking it away silently would break its identity provider.
DO $$
BEGIN
    IF EXISTS (SELECT FROM api_clients WHERE 'scim' = ANY (scopes)) THEN
        RAISE EXCEPTION 'api_clients: % clients hold the scope scim; take it from them first',
            (SELECT count(*) FROM api_clients WHERE 'scim' = ANY (scopes));
    END IF;
END
$$;
ALTER TABLE api_clients DROP CONSTRAINT ck_api_clients_scopes;
ALTER TABLE api_clients ADD CONSTRAINT ck_api_clients_scopes CHECK (
    cardinality(scopes) > 0
    AND scopes <@ ARRAY['accounts:read', 'accounts:write', 'accounts:delete', 'accounts:erase', 'sessions',
                        'sessions:client-address']::text[]
    AND ('sessions' = ANY (scopes) OR NOT 'sessions:client-address' = ANY (scopes)));
