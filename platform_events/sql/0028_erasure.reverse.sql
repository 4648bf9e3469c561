-- 0028 undone: the clients that hold accounts:erase lose it (a client that held only it is revoked),
-- and no delivery or publication may stay CANCELLED (0024's reverse, which runs first, refuses while
-- an account is erased; a cancelled row left by an erasure is refused here too: delete its event's
-- rows first, or keep the migration).
UPDATE api_clients SET revoked_at = now(), revoked_reason = 'the scope accounts:erase was withdrawn'
    WHERE scopes = ARRAY['accounts:erase']::text[] AND revoked_at IS NULL;
UPDATE api_clients SET scopes = CASE WHEN scopes = ARRAY['accounts:erase']::text[] THEN ARRAY['accounts:read']::text[]
                                     ELSE array_remove(scopes, 'accounts:erase') END
    WHERE 'accounts:erase' = ANY (scopes);
ALTER TABLE api_clients DROP CONSTRAINT ck_api_clients_scopes;
ALTER TABLE api_clients ADD CONSTRAINT ck_api_clients_scopes CHECK (
    cardinality(scopes) > 0
    AND scopes <@ ARRAY['accounts:read', 'accounts:write', 'accounts:delete', 'sessions',
                        'sessions:client-address']::text[]
    AND ('sessions' = ANY (scopes) OR NOT 'sessions:client-address' = ANY (scopes)));

ALTER TABLE event_publications DROP CONSTRAINT ck_event_publications_status;
ALTER TABLE event_publications ADD CONSTRAINT ck_event_publications_status
    CHECK (status IN ('PENDING', 'PUBLISHED'));
ALTER TABLE webhook_deliveries DROP CONSTRAINT ck_webhook_deliveries_status;
ALTER TABLE webhook_deliveries ADD CONSTRAINT ck_webhook_deliveries_status
    CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED', 'PERMANENTLY_FAILED'));
