"""flex_template/metadata.json, written from the sources' descriptions (docs/flex-template.md).

Dataflow reads the committed file as it is; this module is what writes it, and a test holds the
committed file to what it writes. The ``source`` parameter offers every registered source whose
description has a template part (``FlexPart``); the other parameters are those sources' flags, as
each command has them (its own, then the shared ones of the groups it declares), but those the
template leaves out on purpose (:data:`LEFT_OUT`, and each source's ``FlexPart.left_out``):

- the help text is the flag's ``--help`` text, then the flag and, for a flag not every offered
  source has, the sources that have it (``(--realm; keycloak only)``);
- on/off flags (``store_true``) take ``true``/``false``; a flag of fixed choices offers them; a
  flag naming files the workers read takes a ``gs://`` path; a repeated flag takes its values in
  one parameter, separated by a comma or by the source's ``FlexPart.separators``;
- labels and the patterns of other values: the shared flags' below, a source's own in its
  ``FlexPart`` (``labels``, ``patterns``).

Example::

    python -m pipeline.flex_metadata            # writes flex_template/metadata.json
    python -m pipeline.flex_metadata --check    # exit 1 when the committed file differs
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from transforms.sources.declaration import SourceDescription, reads_of

__all__ = ["METADATA", "LEFT_OUT", "GCS_PATH", "BOOLEAN", "generate", "parameters_of", "render", "main"]

METADATA = Path(__file__).resolve().parents[1] / "flex_template" / "metadata.json"

# Flags of every migrate command the template leaves out on purpose (docs/flex-template.md, "Left
# out on purpose"); a source leaves out its own in its description (``FlexPart.left_out``).
LEFT_OUT = frozenset(
    {
        "help",
        "api",
        "break_lock",
        "zitadel_config",
        "bcrypt_min_cost",
        "bcrypt_max_cost",
        "multiline",
        "quiet",
        "old_system_store",
    }
)
GCS_PATH = "^gs://[a-z0-9][-_.a-z0-9]{1,220}/.+$"
BOOLEAN = "^(true|false)$"
_MOUNTED_FILE = "^/[^\\s]*[^/\\s]$"
_PAIRS = "^[^=,\\s]+=[0-9]+(,[^=,\\s]+=[0-9]+)*$"
_DECIMAL = "^[0-9]+(\\.[0-9]+)?$"
_LIMIT = "^[0-9]+(\\.[0-9]+)?%?$"

# The shared flags' labels and value patterns (their help text is the flag's): name → (label, pattern).
_SHARED: dict[str, tuple[str, str | None]] = {
    "org": ("ZITADEL organization id", "^[0-9]{1,40}$"),
    "output": ("Import body path", GCS_PATH),
    "dead_letter": ("Dead-letter path", GCS_PATH),
    "batch_size": ("Users per body", "^[1-9][0-9]{0,3}$"),
    "timeout": ("Body timeout", "^([0-9]+(\\.[0-9]+)?(h|m|s|ms|us|ns))+$"),
    "strict": ("Strict", None),
    "metadata": ("Carry metadata", None),
    "email_fallback": ("E-mail fallback", "^[^\\s@]*\\{(username|id)\\}[^\\s@]*@[^\\s@]+$"),
    "idp_map": ("IdP links", _PAIRS),
    "on_unsupported_hash": ("Unsupported hashes", None),
    "state": ("Sync state folder", GCS_PATH),
    "on_removed": ("Removed users", None),
    "max_removals": ("Maximum removals", _LIMIT),
    "max_blocks": ("Maximum blocks", _LIMIT),
    "allow_partial": ("Allow partial input", None),
    "project_id": ("ZITADEL project id", "^[A-Za-z0-9_-]{1,200}$"),
    "create_project": ("Create project named", "^[^\\n]{1,200}$"),
    "push_url": ("ZITADEL URL", "^https?://[^\\s/]+(/[^\\s]*)?$"),
    "push_concurrency": ("Push concurrency", "^[1-9][0-9]{0,2}$"),
    "push_max_concurrency": ("Push maximum concurrency", "^[1-9][0-9]{0,2}$"),
    "push_max_rate": ("Push maximum rate", _DECIMAL),
    "push_max_attempts": ("Push maximum attempts", "^[1-9][0-9]{0,1}$"),
    "push_request_timeout": ("Push request timeout", _DECIMAL),
    "push_verify": ("Verify the push", None),
    # Secrets go in by reference only: the path of a file mounted on the launcher.
    "token_file": ("Token file (path)", _MOUNTED_FILE),
    "key_file": ("Service-account key file (path)", _MOUNTED_FILE),
    "client_id": ("Client id", "^[^\\s]{1,200}$"),
    "client_secret_file": ("Client secret file (path)", _MOUNTED_FILE),
}
# Required in the template though the CLI has a default: a Dataflow run writes to Cloud Storage.
_REQUIRED = ("org", "output")


def _actions(source: SourceDescription) -> dict[str, argparse.Action]:
    """The source command's flags as the CLI has them, by parameter name, in the command's order."""
    from pipeline.source_command import add_source_arguments

    parser = argparse.ArgumentParser(add_help=False)
    add_source_arguments(parser, source)
    return {a.dest: a for a in parser._actions if any(f.startswith("--") for f in a.option_strings)}


def _offered(sources: Sequence[SourceDescription]) -> dict[str, dict[str, argparse.Action]]:
    """Each offered source's template parameters (its flags but those left out), by name."""
    offered = {}
    for source in sources:
        if source.flex is None:
            continue
        left_out = LEFT_OUT | source.flex.left_out
        offered[source.name] = {name: a for name, a in _actions(source).items() if name not in left_out}
    return offered


def parameters_of(source: SourceDescription) -> set[str]:
    """The template parameters of ``source``'s command: its own flags and the shared ones of its
    groups, but those left out (a source without hashes has no ``on_unsupported_hash``)."""
    return set(_offered([source]).get(source.name, {}))


def _help(action: argparse.Action) -> str:
    """The flag's ``--help`` text, its ``%(default)s`` filled in as argparse does."""
    return (action.help or "") % {**vars(action), "default": action.default}


def _parameter(name: str, having: dict[str, argparse.Action], offered: int, sources: dict) -> dict:
    """One parameter, from the flag as the sources that have it declare it."""
    first = next(iter(having.values()))
    flex = {src: sources[src].flex for src in having}
    label, pattern = _SHARED.get(name, (None, None))
    own_labels = list(dict.fromkeys(flex[src].labels[name] for src in having if name in flex[src].labels))
    label = label or ", or ".join(own_labels) or name.replace("_", " ").capitalize()
    helps = list(dict.fromkeys(_help(action) for action in having.values()))
    text = helps[0] if len(helps) == 1 else "; ".join(f"{src}: {_help(a)}" for src, a in having.items())
    flag = f"--{name.replace('_', '-')}"
    only = f"; {', '.join(having)} only" if len(having) < offered else ""
    param: dict = {
        "name": name,
        "label": label,
        "helpText": f"{text} ({flag}{only})",
        "isOptional": name not in _REQUIRED,
    }
    custom: dict[str, str] = {}
    if first.nargs == 0:
        param["regexes"], custom["kind"] = [BOOLEAN], "bool"
    elif first.choices:
        param["regexes"] = [f"^({'|'.join(str(c) for c in first.choices)})$"]
    elif any(reads_of(a) is not None for a in having.values()):  # files: on Cloud Storage
        param["regexes"] = [GCS_PATH]
    else:
        pattern = pattern or next(
            (flex[src].patterns[name] for src in having if name in flex[src].patterns), None
        )
        if pattern:
            param["regexes"] = [pattern]
    if isinstance(first, argparse._AppendAction):
        custom["separator"] = next(
            (flex[src].separators[name] for src in having if name in flex[src].separators), ","
        )
    if custom:
        param["customMetadata"] = custom
    return param


def generate(sources: Sequence[SourceDescription] | None = None) -> dict:
    """The template's metadata document for ``sources`` (default: every registered source)."""
    if sources is None:
        from transforms.sources.registry import descriptions

        sources = descriptions()
    by_name = {s.name: s for s in sources}
    offered = _offered(sources)
    names = list(offered)
    listed = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else "".join(names)
    order = dict.fromkeys(_REQUIRED[:1])  # --org, then the sources' own flags, then the shared ones
    for params in offered.values():
        order.update(dict.fromkeys(p for p in params if p not in _SHARED))
    for params in offered.values():
        order.update(dict.fromkeys(params))
    parameters = [
        {
            "name": "source",
            "label": "Source system",
            "helpText": f"{listed}: which `zitadel-beam migrate` command runs",
            "isOptional": False,
            "regexes": [f"^({'|'.join(names)})$"],
        }
    ]
    for name in order:
        having = {src: params[name] for src, params in offered.items() if name in params}
        parameters.append(_parameter(name, having, len(offered), by_name))
    return {
        "name": "zitadel-beam migrate",
        "description": f"Exports of {listed} on Cloud Storage to ZITADEL import bodies (zitadel-beam "
        "migrate), optionally pushed to ZITADEL; see docs/flex-template.md",
        "parameters": parameters,
    }


def render(document: dict) -> str:
    """The file's text: two-space indents, characters as they are, a final newline."""
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.flex_metadata", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--check", action="store_true", help="exit 1 when the committed file differs")
    parser.add_argument(
        "--output", type=Path, default=METADATA, help="where to write (default: the committed file)"
    )
    args = parser.parse_args(argv)
    text = render(generate())
    if args.check:
        if args.output.read_text(encoding="utf-8") != text:
            print(
                f"{args.output} differs from the sources' descriptions: run python -m pipeline.flex_metadata"
            )
            return 1
        return 0
    args.output.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
