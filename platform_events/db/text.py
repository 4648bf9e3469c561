"""What PostgreSQL's text can hold: UTF-8 without NUL. A command line's undecodable bytes reach Python
as lone surrogates, which no UTF-8 encoding takes; the database would refuse them with a traceback."""


def is_utf8(text: str) -> bool:
    """Whether ``text`` encodes as UTF-8 (no lone surrogates). NUL is checked apart, where it matters."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
