"""Key rings: the configured keys, or one derived from SECRET_KEY for each purpose."""

from unittest import mock

from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from platform_events.key_rings import DERIVED_KEY_ID, key_ring


def test_a_configured_ring_is_used_as_it_is():
    assert key_ring({"k1": b"1" * 32}, purpose=b"a") == {"k1": b"1" * 32}


def test_the_derived_key_is_derived_once_for_each_secret_key_and_purpose(settings):
    """Each purpose has a key of its own, each SECRET_KEY another; asked again, the same key comes without
    deriving it again."""
    settings.SECRET_KEY = "key-ring test one"
    with mock.patch("platform_events.key_rings.HKDF", side_effect=HKDF) as derivation:
        first = key_ring({}, purpose=b"test a")
        assert key_ring({}, purpose=b"test a") == first
        other_purpose = key_ring({}, purpose=b"test b")
        settings.SECRET_KEY = "key-ring test two"
        other_secret = key_ring({}, purpose=b"test a")
    assert derivation.call_count == 3
    keys = {ring[DERIVED_KEY_ID] for ring in (first, other_purpose, other_secret)}
    assert len(keys) == 3 and all(len(key) == 32 for key in keys)
