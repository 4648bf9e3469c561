-- 0021 undone: its triggers gone, and the deletion tokens with them (a link mailed and not used yet
-- stops working; the accounts it deprovisioned stay deprovisioned).
DROP TRIGGER after_token_consumed_deletion ON tokens;
DROP FUNCTION trg_after_token_consumed_deletion();
DROP TRIGGER before_token_insert_deletion ON tokens;
DROP FUNCTION trg_before_token_insert_deletion();
DELETE FROM tokens WHERE action = 'deletion';
