"""Entry point of the Dataflow Flex Template (docs/flex-template.md).

The template launcher runs this file with the template's parameters as ``--name=value`` (names from
``flex_template/metadata.json``, which ``pipeline/flex_metadata.py`` writes from the sources'
descriptions) mixed with Dataflow's own pipeline options (``--runner``,
``--project``, ``--temp_location``, ...). This module turns the parameters into the ``migrate``
command line and calls ``pipeline.cli.main``; Beam's options pass through unchanged.

Refused with one line (exit 2): a parameter the metadata does not list and Beam does not know, and
a value that looks like an inline secret (a token, a JWT, a PEM key). Credentials go in by
reference only: ``token_file``, ``key_file`` and ``client_secret_file`` name a file mounted on the
launcher, never its contents.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path

from pipeline import cli
from pipeline.flex_metadata import LEFT_OUT, METADATA
from transforms.common.errors import ConfigError

__all__ = [
    "METADATA",
    "LEFT_OUT",
    "load_parameters",
    "template_sources",
    "metadata_problems",
    "template_argv",
    "main",
]

# Parameters that name a file holding a secret: the value must be a path, never the secret.
SECRET_FILE_PARAMETERS = frozenset({"token_file", "key_file", "client_secret_file"})
_TRUE, _FALSE = ("true", "1", "yes"), ("false", "0", "no", "")
_SOURCE_CHOICES = re.compile(r"\^\(([a-z0-9|]+)\)\$")

# What an inline secret looks like: a JWT, a PEM block, a service-account key's JSON, a bearer value.
_INLINE_SECRET = re.compile(
    r"(eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})|(-----BEGIN [A-Z ]*KEY-----)|(\"private_key\")|"
    r"(^\s*bearer\s)",
    re.IGNORECASE,
)
_PATH = re.compile(r"^/[^\s]*[^/\s]$")


def load_parameters(path: Path = METADATA) -> dict[str, dict]:
    """The template's parameters by name, from its metadata file."""
    document = json.loads(path.read_text(encoding="utf-8"))
    return {param["name"]: param for param in document["parameters"]}


def template_sources(path: Path = METADATA) -> list[str]:
    """The sources the template's ``source`` parameter offers, in the metadata's order."""
    regex = load_parameters(path)["source"]["regexes"][0]
    found = _SOURCE_CHOICES.fullmatch(regex)
    return found.group(1).split("|") if found else []


def metadata_problems(path: Path = METADATA) -> list[str]:
    """Where flex_template/metadata.json and the sources' descriptions disagree (``[]``: nowhere):
    the sources ``source`` offers, and the parameters (the whole file is held to what
    ``python -m pipeline.flex_metadata`` writes by tests/pipeline/test_flex_metadata.py)."""
    from pipeline.flex_metadata import generate

    params = load_parameters(path)
    wanted = {param["name"]: param for param in generate()["parameters"]}
    offered = _SOURCE_CHOICES.fullmatch(wanted["source"]["regexes"][0])
    problems = []
    if offered is None or template_sources(path) != offered.group(1).split("|"):
        problems.append(f"source offers {template_sources(path)}, the registry {wanted['source']['regexes']}")
    for name in sorted(set(wanted) - set(params)):
        problems.append(f"{name}: a flag of a source the template offers, not a parameter")
    for name in sorted(set(params) - set(wanted)):
        problems.append(f"{name}: no flag of any source the template offers")
    return problems


def _split(argv: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """``--name=value`` / ``--name value`` pairs of the template's parameters, and the rest."""
    known = load_parameters()
    params: dict[str, str] = {}
    rest: list[str] = []
    items = list(argv)
    while items:
        arg = items.pop(0)
        name, eq, value = arg[2:].partition("=") if arg.startswith("--") else ("", "", "")
        if name in known:
            if not eq:
                if not items:
                    raise ConfigError(f"template parameter {name} has no value")
                value = items.pop(0)
            if name in params:
                raise ConfigError(f"template parameter {name} is given twice")
            params[name] = value
        else:
            rest.append(arg)
    return params, rest


def _check_value(name: str, value: str) -> None:
    if _INLINE_SECRET.search(value):
        # The value itself is never shown: it may be the secret.
        raise ConfigError(f"template parameter {name} looks like an inline secret; pass a file path")
    if name in SECRET_FILE_PARAMETERS and not _PATH.match(value):
        raise ConfigError(
            f"template parameter {name} must be the absolute path of a mounted file, not its contents"
        )


def _flag_args(name: str, value: str, custom: Mapping[str, str]) -> list[str]:
    """One parameter as flags; a repeated flag's values are split at its ``separator``."""
    flag = "--" + name.replace("_", "-")
    if custom.get("kind") == "bool":
        lowered = value.strip().lower()
        if lowered not in _TRUE + _FALSE:
            raise ConfigError(f"template parameter {name} must be true or false")
        return [flag] if lowered in _TRUE else []
    separator = custom.get("separator")
    if separator:
        return [f"{flag}={part.strip()}" for part in value.split(separator) if part.strip()]
    return [f"{flag}={value}"]


def _check_beam_arguments(rest: Sequence[str], beam_flags: dict[str, bool] | None) -> None:
    """What is not a template parameter must be a Beam option (``--name=value`` or ``--name value``)."""
    takes_value = _beam_takes_value() if beam_flags is None else beam_flags
    items = list(rest)
    while items:
        arg = items.pop(0)
        flag, eq, _ = arg.partition("=")
        if not arg.startswith("--"):
            raise ConfigError("a template argument is not --name=value")  # the value may be a secret
        if flag not in takes_value:
            raise ConfigError(f"unknown template parameter {flag[2:]}")  # only the name, never the value
        if not eq and takes_value[flag] and items:
            items.pop(0)


def _beam_takes_value() -> dict[str, bool]:
    """Beam's pipeline options: whether each takes a value (``--runner X``) or not (``--save_main_session``)."""
    actions = cli._beam_parser()._option_string_actions
    return {flag: action.nargs != 0 for flag, action in actions.items() if flag.startswith("--")}


def template_argv(
    argv: Sequence[str], beam_flags: dict[str, bool] | None = None, environ: Mapping[str, str] | None = None
) -> list[str]:
    """The ``zitadel-beam`` argv for the template's arguments; ConfigError for what it refuses."""
    params, rest = _split(argv)
    _check_beam_arguments(rest, beam_flags)
    source = params.pop("source", "")
    offered = template_sources()  # the metadata's; tests/pipeline/test_flex_entry.py holds it to the registry
    if source not in offered:
        raise ConfigError(f"template parameter source must be one of {', '.join(offered)}")
    known = load_parameters()
    out = ["migrate", source]
    takes = _parameters_of(source)
    for name, value in params.items():
        _check_value(name, value)
        if name not in takes:  # another source's flag: its command would take it for a Beam option
            raise ConfigError(f"template parameter {name} is not a flag of migrate {source}")
        out += _flag_args(name, value, known[name].get("customMetadata", {}))
    # Workers install the same packages as the launcher: the image names its setup.py
    # (FLEX_TEMPLATE_PYTHON_SETUP_FILE); added here when the launcher has not passed it itself.
    setup_file = (os.environ if environ is None else environ).get("FLEX_TEMPLATE_PYTHON_SETUP_FILE")
    if setup_file and not any(arg.partition("=")[0] == "--setup_file" for arg in rest):
        rest = [*rest, f"--setup_file={setup_file}"]
    return out + rest


def _parameters_of(source: str) -> set[str]:
    """The template parameters the source's command takes (its flags and its groups' shared ones)."""
    from pipeline.flex_metadata import parameters_of
    from transforms.sources.registry import get

    return parameters_of(get(source))


def main(argv: Sequence[str] | None = None) -> int:
    try:
        command = template_argv(sys.argv[1:] if argv is None else argv)
    except ConfigError as err:
        print(f"zitadel-beam: error: {err}", file=sys.stderr)
        return 2
    return cli.main(command)


if __name__ == "__main__":
    sys.exit(main())
