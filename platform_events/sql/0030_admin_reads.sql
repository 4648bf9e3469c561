-- Two reads of the back-office that otherwise walk a whole partition (bench/admin.py, 3,000,000 rows).
--
-- The dashboard's latest staff actions: newest first, by users but not by accounts acting for themselves
-- (lifecycle/audit_trail/selectors.py: latest_staff_actions). Without it the newest month's primary key
-- is read backwards past every row the triggers wrote for sign-ups and tokens, 1,400,000 of them at a
-- million accounts.
CREATE INDEX audit_events_staff_actions_idx ON audit_events (occurred_at)
    WHERE actor_type = 'USER' AND actor_id NOT LIKE 'account:%';
-- A row by its id alone (a link without its time, ?at=): the key leads with occurred_at, so each
-- partition's key would be read whole for it. Hash: only equality is asked, and it is smaller than a
-- B-tree of random uuids.
CREATE INDEX audit_events_id_idx ON audit_events USING hash (id);
