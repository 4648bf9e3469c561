"""Reading settings from the environment, strictly.

django-environ does the parsing; these wrappers turn a bad value into one sentence that names
the variable (``ImproperlyConfigured``), where django-environ would guess (``DEBUG=maybe`` is
False to it) or raise a bare ``ValueError``.
"""

import base64
import binascii
import ipaddress
import os
import re
from urllib.parse import unquote, urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import environ
from django.core.exceptions import ImproperlyConfigured

env = environ.Env()

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def read_bool(name: str, default: bool) -> bool:
    raw = env.str(name, default=None)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value not in _TRUE | _FALSE:
        raise ImproperlyConfigured(f"{name} must be true or false (or 1/0, yes/no, on/off), not {raw!r}.")
    return value in _TRUE


def read_int(name: str, default: int, *, minimum: int = 0, maximum: int | None = None) -> int:
    raw = env.str(name, default=None)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a whole number, not {raw!r}.") from None
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be at least {minimum}, not {value}.")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name} must be at most {maximum}, not {value}.")
    return value


def read_float(name: str, default: float, *, minimum: float, maximum: float) -> float:
    raw = env.str(name, default=None)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name} must be a number, not {raw!r}.") from None
    if not minimum <= value <= maximum:
        raise ImproperlyConfigured(f"{name} must be between {minimum} and {maximum}, not {value}.")
    return value


def read_choice(name: str, default: str, choices: list[str]) -> str:
    value = env.str(name, default=default).strip().upper() or default
    if value not in choices:
        raise ImproperlyConfigured(f"{name} must be one of {', '.join(choices)}, not {value!r}.")
    return value


def read_list(name: str, default: list[str]) -> list[str]:
    raw = env.str(name, default=None)
    if raw is None:
        return default
    return [item.strip() for item in raw.split(",") if item.strip()]


_HOST_PORT = re.compile(r"^(?:\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$")
_TOPIC_CHARACTERS = re.compile(r"^[A-Za-z0-9._-]*$")


def read_kafka_servers(name: str) -> str:
    """A Kafka bootstrap list, ``host:port[,host:port...]``; "" when unset (the relay is off)."""
    raw = env.str(name, default="").strip()
    servers = [item.strip() for item in raw.split(",")] if raw else []
    for server in servers:
        match = _HOST_PORT.match(server)
        if not match or not 1 <= int(match.group(1)) <= 65535:
            raise ImproperlyConfigured(
                f"{name} must be host:port pairs separated by commas (broker1:9092,broker2:9092), not {server!r}."
            )
    return ",".join(servers)


def read_topic_prefix(name: str, default: str) -> str:
    """The start of a Kafka topic's name: letters, digits, '.', '_' and '-' (Kafka's own rule), up to 200."""
    value = env.str(name, default=default).strip()
    if not _TOPIC_CHARACTERS.match(value) or len(value) > 200:
        raise ImproperlyConfigured(
            f"{name} may hold only letters, digits, '.', '_' and '-', up to 200 characters, not {value!r}."
        )
    return value


KAFKA_SECURITY_PROTOCOLS = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"]
KAFKA_SASL_MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]


def read_kafka_security() -> dict[str, str]:
    """TLS and SASL toward the broker, as librdkafka's properties (docs/kafka.md, "Configuration"). A
    credential or file given for a protocol that does not use it is refused rather than ignored: the
    operator meant something by it."""
    protocol = read_choice("KAFKA_SECURITY_PROTOCOL", "PLAINTEXT", KAFKA_SECURITY_PROTOCOLS)
    sasl = protocol.startswith("SASL_")
    tls = protocol.endswith("SSL")
    config = {"security.protocol": protocol.lower()}
    username = env.str("KAFKA_SASL_USERNAME", default="").strip()
    password = env.str("KAFKA_SASL_PASSWORD", default="")
    mechanism = env.str("KAFKA_SASL_MECHANISM", default="").strip()
    if sasl:
        if not username or not password:
            raise ImproperlyConfigured(
                f"KAFKA_SECURITY_PROTOCOL={protocol} needs KAFKA_SASL_USERNAME and KAFKA_SASL_PASSWORD."
            )
        config["sasl.mechanism"] = read_choice("KAFKA_SASL_MECHANISM", "SCRAM-SHA-512", KAFKA_SASL_MECHANISMS)
        config["sasl.username"], config["sasl.password"] = username, password
    elif username or password or mechanism:
        raise ImproperlyConfigured(
            f"KAFKA_SASL_* is set but KAFKA_SECURITY_PROTOCOL is {protocol}: use SASL_SSL (or SASL_PLAINTEXT) to sign in."
        )
    files = {
        "KAFKA_SSL_CA_LOCATION": "ssl.ca.location",
        "KAFKA_SSL_CERTIFICATE_LOCATION": "ssl.certificate.location",
        "KAFKA_SSL_KEY_LOCATION": "ssl.key.location",
    }
    for name, key in files.items():
        path = env.str(name, default="").strip()
        if not path:
            continue
        if not tls:
            raise ImproperlyConfigured(f"{name} is set but KAFKA_SECURITY_PROTOCOL is {protocol}: use SSL or SASL_SSL.")
        if not os.path.isfile(path) or not os.access(path, os.R_OK):
            raise ImproperlyConfigured(f"{name} names no readable file: {path!r}.")
        config[key] = path
    if ("ssl.certificate.location" in config) != ("ssl.key.location" in config):
        raise ImproperlyConfigured(
            "KAFKA_SSL_CERTIFICATE_LOCATION and KAFKA_SSL_KEY_LOCATION go together: a client certificate needs its key."
        )
    if key_password := env.str("KAFKA_SSL_KEY_PASSWORD", default=""):
        if "ssl.key.location" not in config:
            raise ImproperlyConfigured("KAFKA_SSL_KEY_PASSWORD is set but KAFKA_SSL_KEY_LOCATION is not.")
        config["ssl.key.password"] = key_password
    return config


def read_database_url(name: str = "DATABASE_URL") -> dict | None:
    """The database settings from a postgres:// URL, or None when the variable is unset."""
    raw = env.str(name, default="").strip()
    if not raw:
        return None
    try:
        config = env.db_url_config(raw)
    except (ValueError, ImproperlyConfigured) as error:
        raise ImproperlyConfigured(f"{name} is not a valid database URL ({error}).") from None
    if config.get("ENGINE") != "django.db.backends.postgresql":
        raise ImproperlyConfigured(
            f"{name} must be a postgres:// or postgresql:// URL; Lifecycle runs on PostgreSQL only."
        )
    # A unix-socket directory may be given percent-encoded as the host (postgres://%2Fvar%2Frun%2Fpostgresql/db).
    config["HOST"] = unquote(config.get("HOST") or "")
    return config


def read_email_url(name: str, default: str) -> dict:
    raw = env.str(name, default=default).strip() or default
    try:
        return env.email_url_config(raw)
    except (ValueError, ImproperlyConfigured) as error:
        raise ImproperlyConfigured(
            f"{name} is not a valid e-mail URL ({error}); use e.g. smtp://user:password@host:587 or consolemail://."
        ) from None


def read_url(name: str, default: str, *, optional: bool = False) -> str:
    """A base URL links are built on: scheme and host, perhaps a path; nothing a link could not follow.
    ``optional``: an empty value means none (``""``)."""
    raw = env.str(name, default=default).strip().rstrip("/")
    if optional and not raw:
        return ""
    if not raw.startswith(("http://", "https://")):
        raise ImproperlyConfigured(f"{name} must be an http:// or https:// URL, not {raw!r}.")
    parts = urlsplit(raw)
    if any(character.isspace() for character in raw) or not parts.hostname:
        raise ImproperlyConfigured(f"{name} must be a URL with a host and no spaces, not {raw!r}.")
    if parts.query or parts.fragment or "?" in raw or "#" in raw or parts.username or parts.password:
        raise ImproperlyConfigured(
            f"{name} must be a base URL (scheme, host, perhaps a path) without a query, fragment or login, not {raw!r}."
        )
    return raw


def read_time_zone(name: str, default: str) -> str:
    value = env.str(name, default=default).strip() or default
    try:
        ZoneInfo(value)
    except (ZoneInfoNotFoundError, ValueError):
        raise ImproperlyConfigured(
            f"{name} must be a time zone name such as Europe/Paris or UTC, not {value!r}."
        ) from None
    return value


def read_key_ring(name: str) -> dict[str, bytes]:
    """``kid:base64-of-32-bytes,kid:...`` (the first key is the current one, all are accepted), as an ordered dict;
    empty when unset.
    Never says a key's value in an error."""
    raw = env.str(name, default=None)
    if raw is None or raw.strip() == "":
        return {}
    ring: dict[str, bytes] = {}
    for position, entry in enumerate(raw.split(","), start=1):
        key_id, sep, encoded = entry.strip().partition(":")
        if not sep or not re.fullmatch(r"[A-Za-z0-9_.-]{1,64}", key_id):
            raise ImproperlyConfigured(
                f"{name}: entry {position} must be KEY_ID:BASE64_KEY, its id 1-64 letters, digits, '_', '.' or '-'."
            )
        if key_id in ring:
            raise ImproperlyConfigured(f"{name}: key id {key_id!r} appears twice.")
        try:
            key = base64.b64decode(encoded.strip(), validate=True)
        except (binascii.Error, ValueError):
            raise ImproperlyConfigured(f"{name}: key {key_id!r} is not valid base64.") from None
        if len(key) != 32:
            raise ImproperlyConfigured(
                f"{name}: key {key_id!r} must be 32 bytes, not {len(key)};"
                ' make one with: python -c "import os, base64; print(base64.b64encode(os.urandom(32)).decode())"'
            )
        ring[key_id] = key
    return ring


def read_seconds_list(name: str, default: list[int]) -> list[int]:
    """Comma-separated whole seconds, each 0 or more: ``0,5,300``."""
    raw = env.str(name, default=None)
    if raw is None or raw.strip() == "":
        return default
    try:
        values = [int(part) for part in raw.split(",")]
    except ValueError:
        raise ImproperlyConfigured(
            f"{name} must be whole seconds separated by commas (0,5,300), not {raw!r}."
        ) from None
    if not values or any(value < 0 or value > 7 * 86_400 for value in values):
        raise ImproperlyConfigured(f"{name}: each delay must be between 0 and 604800 seconds (a week).")
    return values


def read_networks(name: str) -> tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...]:
    """Comma-separated networks (``10.0.0.0/8,fd00::/8``; an address alone is its own network); empty
    when unset."""
    raw = env.str(name, default="")
    networks = []
    for part in (part.strip() for part in raw.split(",")):
        if not part:
            continue
        try:
            networks.append(ipaddress.ip_network(part))
        except ValueError:
            try:
                # strict=False is only used to say which network was meant: a host's bits are never dropped.
                meant = f" (did you mean {ipaddress.ip_network(part, strict=False)}?)"
            except ValueError:
                meant = ""
            raise ImproperlyConfigured(
                f"{name} must be comma-separated networks such as 10.0.0.0/8 or fd00::/8, not {part!r}{meant}."
            ) from None
    return tuple(networks)


def read_accent_colour(name: str, default: str) -> str:
    """A colour as ``#rrggbb`` that white text on it, and it as text on white, can be read (WCAG 2.1
    AA: a contrast ratio of at least 4.5:1): the public pages draw their buttons and links in it."""
    value = env.str(name, default=default).strip() or default
    if not re.fullmatch(r"#[0-9a-fA-F]{6}", value):
        raise ImproperlyConfigured(f"{name} must be a colour written #rrggbb, such as #2f5d8a, not {value!r}.")
    ratio = contrast_with_white(value)
    if ratio < 4.5:
        raise ImproperlyConfigured(
            f"{name} {value} is too light: white on it has a contrast ratio of {ratio:.2f}, and WCAG asks"
            " at least 4.5 for text. Choose a darker shade."
        )
    return value.lower()


def contrast_with_white(colour: str) -> float:
    """WCAG 2.1's contrast ratio between ``#rrggbb`` and white."""

    def channel(hex_pair: str) -> float:
        value = int(hex_pair, 16) / 255
        return value / 12.92 if value <= 0.04045 else ((value + 0.055) / 1.055) ** 2.4

    red, green, blue = (channel(colour[i : i + 2]) for i in (1, 3, 5))
    luminance = 0.2126 * red + 0.7152 * green + 0.0722 * blue
    return 1.05 / (luminance + 0.05)
