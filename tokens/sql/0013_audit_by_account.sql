-- An account's trail includes its tokens' rows (issue 11). Every token row names its account in its
-- diff (after, or before for token.deleted), so the trail is found by that name, not through the
-- tokens table: it outlives the token rows that retention deletes.
CREATE INDEX audit_events_token_account_idx
    ON audit_events ((coalesce(diff_after ->> 'account', diff_before ->> 'account')), occurred_at DESC)
    WHERE resource_type = 'token';
