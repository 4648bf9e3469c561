DROP TABLE account_daily_counts;
