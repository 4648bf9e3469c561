"""Django's PostgreSQL backend, with a kept connection's health check that costs no round trip
while the connection's socket is quiet (base.py): the ENGINE of every database in settings."""
