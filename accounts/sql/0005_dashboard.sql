-- The dashboard counts sign-ups and activations of the last 30 days. Both timestamps grow with the
-- table's physical order (rows are appended, activation follows sign-up within minutes), so BRIN
-- indexes serve those ranges for a few kilobytes and next to no insert cost.
CREATE INDEX accounts_created_at_brin ON accounts USING brin (created_at);
CREATE INDEX accounts_activated_at_brin ON accounts USING brin (activated_at);
