"""The database machinery every app uses: SQL-file migrations (sql_files), the database's refusals
as errors (refusals), advisory locks (locks), the direct LISTEN connection (direct_connection) and
row estimates for pages that must not count (estimates)."""
