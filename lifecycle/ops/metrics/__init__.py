"""Prometheus metrics (docs/production.md, "Metrics"): ``/metrics`` behind a bearer token (views.py), the product's
figures read from PostgreSQL at each scrape (figures.py), and gunicorn's hooks for prometheus_client's
multiprocess mode (gunicorn.py)."""
