ALTER TABLE jobs DROP COLUMN progress_at;
