"""Digests the tokens stored before 0015: every row gets its secret's digest, and every token already
mailed loses its plain secret and code for their digests (tokens/sql/0015_digests.sql), in batches
that commit one by one, with progress. Run again, it resumes where it stopped."""

import sys

from django.db import migrations

BATCH = 1000


def digest_stored_tokens(apps, schema_editor):
    from tokens.digests import code_digest, current_key_id

    connection = schema_editor.connection
    key_id = current_key_id()
    with connection.cursor() as cursor:
        cursor.execute("SELECT count(*) FROM tokens WHERE secret_digest IS NULL OR (mail_state = 'sent' AND code IS NOT NULL)")
        total = cursor.fetchone()[0]
        done, after = 0, 0
        while True:
            with connection.cursor() as batch_cursor:
                batch_cursor.execute(
                    "SELECT id, code, mail_state = 'sent' FROM tokens WHERE id > %s"
                    " AND (secret_digest IS NULL OR (mail_state = 'sent' AND code IS NOT NULL)) ORDER BY id LIMIT %s",
                    [after, BATCH],
                )
                rows = batch_cursor.fetchall()
                if not rows:
                    break
                after = rows[-1][0]
                ids = [row[0] for row in rows]
                batch_cursor.execute(
                    "UPDATE tokens SET secret_digest = sha256(secret) WHERE id = ANY(%s) AND secret IS NOT NULL", [ids]
                )
                mailed = [(row[0], row[1]) for row in rows if row[2] and row[1] is not None]
                if mailed:
                    batch_cursor.execute(
                        "SELECT tokens_digest_mailed(%s, %s, %s)",
                        [[i for i, _ in mailed], [code_digest(i, code, key_id=key_id) for i, code in mailed], key_id],
                    )
            done += len(rows)
            sys.stdout.write(f"\n  tokens: digested {done} of {total} stored tokens")
            sys.stdout.flush()


class Migration(migrations.Migration):
    # Each batch commits on its own: a large table is not held in one transaction, and a stopped run resumes.
    atomic = False

    dependencies = [("tokens", "0015_digests")]

    operations = [migrations.RunPython(digest_stored_tokens, migrations.RunPython.noop, elidable=False)]
