"""Credentials for the admin API: a bearer token, a client id and secret, or a service-account key.

``load_credentials`` reads the flags (or ``ZITADEL_TOKEN`` / ``ZITADEL_KEY_FILE``) and refuses, in
one line that never quotes a value, what cannot be a credential; ``normalise_base_url`` checks the
instance URL. Used by the command modules (``pipeline/options.py``) before any request::

    creds = load_credentials(token_file="pat.txt")
    base = normalise_base_url("https://my-instance.zitadel.cloud/")
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import urllib.parse
from collections.abc import Mapping
from typing import Literal

__all__ = [
    "CredentialError",
    "Credentials",
    "CredentialKind",
    "TOKEN_CHARS",
    "load_credentials",
    "normalise_base_url",
]

CredentialKind = Literal["token", "client", "key"]


class CredentialError(ValueError):
    """Credentials could not be loaded (missing file, malformed key file)."""


@dataclasses.dataclass(frozen=True)
class Credentials:
    """One of: a bearer ``token`` (PAT / access token), ``client_id`` + ``client_secret``, or a
    service-account ``key`` (the parsed JSON key file). ``repr`` never shows a secret."""

    kind: CredentialKind
    token: str = dataclasses.field(default="", repr=False)
    client_id: str = ""
    client_secret: str = dataclasses.field(default="", repr=False)
    key: Mapping[str, str] = dataclasses.field(default_factory=dict, repr=False)

    def secrets(self) -> tuple[str, ...]:
        """Strings to scrub from anything that is logged."""
        return tuple(s for s in (self.token, self.client_secret, self.key.get("key", "")) if s)


# A bearer token is one header value: visible ASCII, no space, no line break (RFC 6750 b64token
# and the opaque tokens ZITADEL issues). Checked before any header is built, so http.client's
# "Invalid header value" error, which would print the whole header, can never happen.
TOKEN_CHARS = re.compile(r"[\x21-\x7e]+")
_KEY_FIELDS = ("type", "keyId", "key", "userId")


def _looks_like(value: str, what: str, key_flag: str, header: bool = True) -> str | None:
    """Why ``value`` (stripped) cannot be a token or secret, in words that never quote it.

    ``header``: the value is sent as it is in a header (a bearer token), so it must also be one
    run of visible characters and not JSON; a client secret (sent base64-encoded) is only refused
    when it spans several lines or is a key file.

    >>> _looks_like('{"type":"serviceaccount","keyId":"1","key":"-----BEGIN"}', "token file t", "--key-file")
    'token file t is a service-account key: give it as --key-file'
    >>> _looks_like("abc\\ndef", "ZITADEL_TOKEN", "ZITADEL_KEY_FILE")
    'ZITADEL_TOKEN holds 2 lines: a token is one line'
    """
    if value[:1] in '{["':
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict) and (
            parsed.get("type") in ("serviceaccount", "application")
            or any(k in parsed for k in _KEY_FIELDS[1:])
        ):
            return f"{what} is a service-account key: give it as {key_flag}"
        if header and isinstance(parsed, dict | list | str):
            kind = {dict: "a JSON object", list: "a JSON array", str: "a quoted JSON string"}[type(parsed)]
            return f"{what} holds {kind}, not a token: a token is one line of text"
    lines = len(value.splitlines())
    if lines > 1:
        return f"{what} holds {lines} lines: a token is one line"
    if header and not TOKEN_CHARS.fullmatch(value):
        return f"{what} holds a space or a character a token cannot have (not shown)"
    return None


def _read_text(path: str, what: str) -> str:
    """A credential file's text, surrounding whitespace stripped; one line naming the flag (never
    the file's name, which may be a secret pasted in its place, nor its content) when it cannot be
    read, is not UTF-8 or is empty."""
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read().strip()
    except UnicodeDecodeError:
        raise CredentialError(f"{what} is not UTF-8 text (a binary file?)") from None
    except OSError as err:
        raise CredentialError(
            f"cannot read {what}: {err.strerror} (the name given is not shown: it may be a secret)"
        ) from None
    if not text:
        raise CredentialError(f"{what} is empty")
    return text


def _read_secret(path: str, what: str, header: bool = True) -> str:
    """A file's text with surrounding whitespace stripped, checked by ``_looks_like``; never quoted."""
    value = _read_text(path, what)
    problem = _looks_like(value, what, "--key-file", header)
    if problem:
        raise CredentialError(problem)
    return value


def _read_key_file(path: str, what: str, token_flag: str) -> Credentials:
    """A service-account JSON key (``{type, keyId, key, userId}``); its text is never quoted."""
    text = _read_text(path, what)
    try:
        key = json.loads(text)
    except ValueError:
        hint = f" (one line: a token? give it as {token_flag})" if len(text.splitlines()) == 1 else ""
        raise CredentialError(f"{what} is not JSON{hint}") from None
    missing = [f for f in _KEY_FIELDS[1:] if not isinstance(key, dict) or not key.get(f)]
    if missing:
        raise CredentialError(f"{what} lacks {', '.join(missing)}")
    return Credentials("key", key={k: str(key[k]) for k in _KEY_FIELDS[1:]})


def load_credentials(
    token_file: str | None = None,
    client_id: str | None = None,
    client_secret_file: str | None = None,
    key_file: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Credentials:
    """Pick the credential from the flags (at most one kind), else env ``ZITADEL_TOKEN`` or
    ``ZITADEL_KEY_FILE`` (one of them).

    A token's surrounding whitespace is stripped; a token of several lines, or one that is JSON (a
    service-account key given as a token is the usual mistake), is refused with one line that says
    what it looks like and never quotes it.

    >>> load_credentials(environ={"ZITADEL_TOKEN": "pat"}).kind
    'token'
    """
    environ = os.environ if environ is None else environ
    given = [
        name
        for name, v in (("--token-file", token_file), ("--client-id", client_id), ("--key-file", key_file))
        if v
    ]
    if len(given) > 1:
        raise CredentialError(f"give one credential, not {' and '.join(given)}")
    if client_secret_file and not client_id:
        raise CredentialError("--client-secret-file needs --client-id")
    if token_file:
        return Credentials("token", token=_read_secret(token_file, "the --token-file file"))
    if client_id:
        if not client_secret_file:
            raise CredentialError("--client-id needs --client-secret-file")
        return Credentials(
            "client",
            client_id=client_id,
            client_secret=_read_secret(client_secret_file, "the --client-secret-file file", header=False),
        )
    if key_file:
        return _read_key_file(key_file, "the --key-file file", "--token-file")
    token = environ.get("ZITADEL_TOKEN", "").strip()
    env_key_file = environ.get("ZITADEL_KEY_FILE", "").strip()
    if token and env_key_file:
        raise CredentialError("both ZITADEL_TOKEN and ZITADEL_KEY_FILE are set: unset one")
    if env_key_file:
        return _read_key_file(env_key_file, "the ZITADEL_KEY_FILE file", "ZITADEL_TOKEN")
    if token:
        problem = _looks_like(token, "ZITADEL_TOKEN", "ZITADEL_KEY_FILE (a path)")
        if problem:
            raise CredentialError(problem)
        return Credentials("token", token=token)
    raise CredentialError(
        "no credentials: give --token-file, --client-id/--client-secret-file, --key-file or set "
        "ZITADEL_TOKEN or ZITADEL_KEY_FILE"
    )


def normalise_base_url(url: str) -> str:
    """Check and normalise the instance URL (``https://x.zitadel.cloud/`` → without the slash)."""
    parsed = urllib.parse.urlsplit(url or "")
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    if parsed.query or parsed.fragment:
        raise ValueError(f"the URL must not have a query or fragment: {url!r}")
    return urllib.parse.urlunsplit((parsed.scheme, parsed.netloc, parsed.path.rstrip("/"), "", ""))
