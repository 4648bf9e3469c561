"""One Signer per endpoint and batch (platform_events/webhooks/signing.py) signs as the specification says."""

from datetime import UTC, datetime

from standardwebhooks.webhooks import Webhook

from platform_events.webhooks.secrets import new_signing_secret
from platform_events.webhooks.signing import Signer


def test_one_signer_signs_each_message_of_a_batch_for_every_secret_it_holds():
    """Made once, a Signer signs many messages, each with its own id and time, one ``v1,`` per secret
    (a rotation's overlap), each verifying with the library under its own secret."""
    new, old = new_signing_secret(), new_signing_secret()
    signer = Signer([new, old])
    for number, body in enumerate(['{"n": 1}', '{"n": 2}']):
        headers = signer.headers(msg_id=f"e{number}", timestamp=datetime.now(UTC), body=body)
        assert headers["webhook-id"] == f"e{number}"
        assert len(headers["webhook-signature"].split(" ")) == 2
        for secret in (new, old):
            assert Webhook(secret).verify(body, headers) == {"n": number + 1}


def test_the_specifications_test_vector():
    # standard-webhooks/standard-webhooks, spec/standard-webhooks.md and its libraries' tests.
    headers = Signer(["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"]).headers(
        msg_id="msg_p5jXN8AQM9LWM0D4loKWxJek",
        timestamp=datetime.fromtimestamp(1614265330, UTC),
        body='{"test": 2432232314}',
    )
    assert headers["webhook-signature"] == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
