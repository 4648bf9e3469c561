"""Digests the tokens stored before 0015: every row gets its secret's digest, and every token already
mailed loses its plain secret and code for their digests (tokens/sql/0015_digests.sql), in batches
that commit one by one, with progress. Run again, it resumes where it stopped."""

import sys

from django.db import migrations

BATCH = 1000


# What is left to do: a row without its secret's digest, or mailed with its plain values still in it.
LEFT = "(secret_digest IS NULL OR (mail_state = 'sent' AND code IS NOT NULL))"


def digest_stored_tokens(apps, schema_editor):
    from tokens.digests import code_digest, current_key_id

    key_id = current_key_id()
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM tokens WHERE {LEFT}")
        total, done, after = cursor.fetchone()[0], 0, 0
        while True:
            cursor.execute(
                f"SELECT id, code, mail_state = 'sent' FROM tokens WHERE id > %s AND {LEFT} ORDER BY id LIMIT %s",
                [after, BATCH],
            )
            rows = cursor.fetchall()
            if not rows:
                break
            after = rows[-1][0]
            cursor.execute(
                "UPDATE tokens SET secret_digest = sha256(secret) WHERE id = ANY(%s) AND secret IS NOT NULL",
                [[row[0] for row in rows]],
            )
            mailed = [(token_id, code) for token_id, code, sent in rows if sent and code is not None]
            if mailed:
                cursor.execute(
                    "SELECT tokens_digest_mailed(%s, %s, %s)",
                    [
                        [token_id for token_id, _ in mailed],
                        [code_digest(token_id, code, key_id=key_id) for token_id, code in mailed],
                        key_id,
                    ],
                )
            done += len(rows)
            sys.stdout.write(f"\n  tokens: digested {done} of {total} stored tokens")
            sys.stdout.flush()


class Migration(migrations.Migration):
    # Each batch commits on its own: a large table is not held in one transaction, and a stopped run resumes.
    atomic = False

    dependencies = [("tokens", "0015_digests")]

    operations = [migrations.RunPython(digest_stored_tokens, migrations.RunPython.noop, elidable=False)]
