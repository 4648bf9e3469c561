-- What erasing an account (accounts/sql/0024_erasure.sql) needs of the outbox's tables and of the
-- client API (docs/rules.md, "Erasure").
--
-- * A delivery or a publication still due when its account is erased is CANCELLED: it is never sent,
--   and it no longer holds back the account's later events (its account.erased) nor the retention of
--   its event. Only the erasure sets it (its function runs as the owner; the move triggers, redefined
--   in 0024, let it through then and only then).
-- * The scope accounts:erase: a client holding it may erase a deprovisioned account at once
--   (DELETE /api/v1/accounts/{id}?erase=now, with accounts:delete). It stands alone, as accounts:delete.
ALTER TABLE webhook_deliveries DROP CONSTRAINT ck_webhook_deliveries_status;
ALTER TABLE webhook_deliveries ADD CONSTRAINT ck_webhook_deliveries_status
    CHECK (status IN ('PENDING', 'DELIVERED', 'FAILED', 'PERMANENTLY_FAILED', 'CANCELLED'));

ALTER TABLE event_publications DROP CONSTRAINT ck_event_publications_status;
ALTER TABLE event_publications ADD CONSTRAINT ck_event_publications_status
    CHECK (status IN ('PENDING', 'PUBLISHED', 'CANCELLED'));

ALTER TABLE api_clients DROP CONSTRAINT ck_api_clients_scopes;
ALTER TABLE api_clients ADD CONSTRAINT ck_api_clients_scopes CHECK (
    cardinality(scopes) > 0
    AND scopes <@ ARRAY['accounts:read', 'accounts:write', 'accounts:delete', 'accounts:erase', 'sessions',
                        'sessions:client-address']::text[]
    AND ('sessions' = ANY (scopes) OR NOT 'sessions:client-address' = ANY (scopes)));
