"""The development inbox: with DEBUG on and EMAIL_URL unset, each e-mail is kept as a file under
``.local/mail/`` (backend.py) and read in the browser at ``/dev/mail/`` (views.py), by a staff login.

Never in production: the settings refuse a file backend with DEBUG off, and the URLs are mounted only
with DEBUG on. Files, not the database: the inbox is the developer's, and it survives (and is removed
with) the database's ``make clean``.
"""
