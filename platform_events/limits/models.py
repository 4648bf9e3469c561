"""The rate limits' counters (platform_events/sql/0008_limits.sql)."""

from django.db import models


class RateLimit(models.Model):
    """One bucket's hits in one fixed window, counted by platform_events/limits/counters.py
    (platform_events/sql/0008_limits.sql)."""

    # The table's identity is (bucket, window_start), unique; Django is given the surrogate key.
    id = models.BigAutoField(primary_key=True)
    bucket = models.TextField()  # the limit's name and a keyed digest of the key, never the key itself
    window_start = models.DateTimeField()
    window_end = models.DateTimeField()
    hits = models.IntegerField()

    class Meta:
        managed = False
        db_table = "rate_limits"

    def __str__(self):
        return f"{self.bucket} from {self.window_start:%Y-%m-%d %H:%M:%S}: {self.hits}"
