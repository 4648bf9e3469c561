"""The mailroom: e-mails every due token exactly once, over SMTP.

A drain run claims due tokens in batches (``FOR UPDATE SKIP LOCKED``, then a lease so other runs
leave the batch alone while it is sent), renders ``templates/emails/<action>.*``, sends the batch
over one SMTP connection, and marks each token ``sent`` in its own commit once the server has
accepted it. So any number of runs may drain at once; a run killed between an accept and its
commit re-sends at most that one e-mail (its Message-ID is the same, so a mail server may fold
the copy); the rest of its batch waits for the lease to end. Nothing is skipped whatever order
transactions commit in: there is no cursor, only the tokens' own state.

Failures: connection refused, a timeout or a 4xx answer are transient (``retrying``, with
exponential backoff, while the token is valid); a 5xx answer or too many attempts make it ``dead``
with the reason. Each run that claims mail leaves a row in ``jobs`` (an idle poll leaves none).

Modules, in the order a run uses them:

- ``claim``: lease a batch of due tokens to a run; give each back marked sent or failed.
- ``render``: the e-mail of a token, from ``templates/emails/<action>.*``.
- ``prerender``: a template rendered once per batch for what its e-mails share, then per e-mail.
- ``send``: one SMTP connection per batch; each token's outcome recorded as it happens.
- ``drain``: the run itself, batch after batch, with its row in ``jobs`` from its first claim.
- ``listener``: ``LISTEN token_insert`` and drain at once (``manage.py listen_mailroom``).
- ``retry``: make dead or retrying mail due again (the admin's "Retry mailing now").
"""
