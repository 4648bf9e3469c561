-- A mail run's row says what it has done so far, and when it last said so (issue 8): a run killed
-- mid-way (kill -9, a lost worker) left its row unfinished with counts of 0 although it had sent mail.
-- A run now records its counts after every batch; the next run closes a row whose progress stopped.
ALTER TABLE jobs ADD COLUMN progress_at timestamptz;
