"""Errors the command line reports as one readable line (exit status 2)."""

__all__ = ["ConfigError", "one_line"]


class ConfigError(Exception):
    """A problem with the command line or its inputs: missing file, bad flag, bad URL.

    Raised before any work starts; the CLI prints ``zitadel-beam: error: <message>`` and exits 2.
    Engines in ``transforms/`` raise it too (a manifest that cannot be read, an instance that
    refuses the credentials), so it lives here, where both import it.
    """


def one_line(err: BaseException, limit: int = 200) -> str:
    """The first line of an error's message, at most ``limit`` characters (messages may quote
    input); the error's type name when it has no message."""
    text = str(err).strip().splitlines()
    return text[0][:limit] if text else type(err).__name__
