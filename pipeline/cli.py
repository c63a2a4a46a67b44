"""The ``zitadel-beam`` command line.

Examples::

    zitadel-beam migrate auth0 --org=123 --users=users.json --passwords=passwords.json \\
        --output=out/importBody.json
    zitadel-beam migrate auth0 ... --runner=DataflowRunner --project=P --region=R \\
        --temp_location=gs://B/tmp --setup_file=./setup.py

Each command lives in its own module, which provides ``add_arguments(parser)`` and
``run(known_args, pipeline_args) -> int``; a source's ``migrate <name>`` is described once, in its
package's ``DESCRIPTION`` (``transforms/sources/registry.py`` finds them; ``source_command.py``
builds the command from it). Flags a command does not know are handed to Beam
(``--runner``, ``--direct_running_mode``, Dataflow options); anything Beam does not know either
is rejected with one readable line.
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import importlib
import logging
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import NoReturn

from pipeline import signals
from pipeline.gcs_env import prepare_emulator_credentials
from pipeline.preflight import check_inputs_read_only, check_paths
from transforms.common.errors import ConfigError
from transforms.files.storage import register_cleanup, unregister_cleanup

__all__ = ["main", "build_parser", "commands", "Command"]

# The commands that are not a source's: (command path, module, help). Each source's ``migrate
# <name>`` comes from its description (transforms/sources/registry.py), listed first. Modules are imported
# when the parser is built.
COMMANDS: list[tuple[tuple[str, ...], str, str]] = [
    (("push",), "pipeline.push", "send a manifest's import bodies to ZITADEL (retries, ledger, resume)"),
    (("verify",), "pipeline.verify", "check through events search that a manifest's users were added"),
    (("export",), "pipeline.export", "export a ZITADEL instance's organizations (POST /admin/v1/export)"),
    (
        ("copy",),
        "pipeline.copy_instance",
        "copy organizations between instances: export, split, push, verify",
    ),
    (
        ("companion",),
        "pipeline.companion",
        "serve|setup|status|import the Actions v2 target that sets legacy passwords at first sign-in",
    ),
]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Command:
    """One command of the line: its path, its help, its flags, its run."""

    path: tuple[str, ...]
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, list[str]], int]
    hands_to_beam: bool  # unknown flags are Beam pipeline options (the rest reject them)
    # A source's flags naming files it reads, those its workers read, and files it reads unnamed
    # (``SourceDescription.files``; pipeline/preflight.py checks them). The other commands'
    # are in preflight's own lists.
    files: Mapping[str, str] = dataclasses.field(default_factory=dict)
    worker_files: tuple[str, ...] = ()
    implied_files: Callable[[argparse.Namespace], dict[str, list[str]]] | None = None


def commands() -> list[Command]:
    """Every command: each registered source's ``migrate <name>``, then the others."""
    from pipeline.source_command import input_flags, run_source
    from transforms.sources.registry import descriptions

    found = []
    for source in descriptions():
        files, worker_files = input_flags(source)
        found.append(
            Command(
                path=("migrate", source.name),
                help=source.help,
                add_arguments=functools.partial(_add_source_arguments, source),
                run=functools.partial(run_source, source),
                hands_to_beam=source.beam_flags,
                files=files,
                worker_files=worker_files,
                implied_files=source.implied_files,
            )
        )
    for path, module_name, help_text in COMMANDS:
        module = importlib.import_module(module_name)
        found.append(
            Command(
                path=path,
                help=help_text,
                add_arguments=module.add_arguments,
                run=module.run,
                hands_to_beam=False,
            )
        )
    return found


def _add_source_arguments(source, parser: argparse.ArgumentParser) -> None:
    from pipeline.source_command import add_source_arguments

    add_source_arguments(parser, source)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose errors become ConfigError (one line, exit 2).

    No prefix matching: with it, ``--token=SECRET`` was taken as ``--token-file`` and the secret
    was then printed as a file name. A flag is spelled out or it is unknown. A required flag that
    is missing while a flag close to it was given says so (``--org-id`` → ``did you mean --org?``).
    """

    # Set on a command whose unknown flags are Beam's (build_parser): those are not misspellings.
    hands_to_beam = False

    def __init__(self, *args, **kwargs) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)
        self._given: list[str] = []

    def parse_known_args(self, args=None, namespace=None):
        # Kept for error(): argparse reports a missing required flag before the unknown ones.
        self._given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(args, namespace)

    def flags(self) -> list[str]:
        """This command's own long flags."""
        return [flag for flag in self._option_string_actions if flag.startswith("--")]

    def error(self, message: str) -> NoReturn:
        if message.startswith("the following arguments are required:"):
            message += self._near_misses(message.split(":", 1)[1])
        raise ConfigError(f"{self.prog}: {message}")

    def _near_misses(self, required_text: str) -> str:
        """``; --org-id is unknown: did you mean --org?`` for each given flag close to a missing one."""
        required = [name.strip() for name in required_text.split(",") if name.strip().startswith("--")]
        beam = _beam_flags() if self.hands_to_beam else set()
        given = [arg.split("=", 1)[0] for arg in self._given if arg.startswith("--")]
        unknown = [flag for flag in dict.fromkeys(given) if flag not in self.flags() and flag not in beam]
        hints = []
        for flag in unknown:
            match = suggest(flag, required)
            if match:
                hints.append(f"; {flag} is unknown: did you mean {match}?")
        return "".join(hints)


# How close an unknown flag must be to a known one to be suggested (difflib's ratio): --verify →
# --push-verify is 0.76; --users-file → --key-file (0.73) and --region → --org (0.62) are not.
_CLOSE = 0.75


def suggest(flag: str, *candidate_lists: Sequence[str]) -> str | None:
    """The flag meant by a misspelt ``flag``, searching the lists in order: a known flag that
    ``flag`` adds a word to (``--realm-file`` → ``--realm``, ``--org-id`` → ``--org``), the one
    known flag that adds a word to it (``--token`` → ``--token-file``), else the closest spelling
    (difflib: ``--verify`` → ``--push-verify``, ``--temp-location`` → ``--temp_location``)."""
    for candidates in candidate_lists:
        shorter = [c for c in candidates if flag.startswith((c + "-", c + "_")) and len(c) > 3]
        if shorter:
            return max(shorter, key=len)
        longer = [c for c in candidates if c.startswith((flag + "-", flag + "_"))]
        if len(longer) == 1:
            return longer[0]
        match = difflib.get_close_matches(flag, list(candidates), n=1, cutoff=_CLOSE)
        if match:
            return match[0]
    return None


def unknown_flags(args: Sequence[str], *known: Sequence[str]) -> str:
    """The flag names among unrecognized arguments, never their values: ``--token=X`` → ``--token``,
    and a bare word (the value of an unknown flag, perhaps a secret) is counted, not shown. With
    ``known`` (lists of flags, searched in order), a close known flag is suggested."""
    names = [arg.split("=", 1)[0] for arg in args if arg.startswith("-")]
    hidden = len(args) - len(names)
    hidden_text = f" (and {hidden} value{'s' if hidden != 1 else ''}, not shown)" if hidden else ""
    values = sum(1 for arg in args if arg.startswith("-") and "=" in arg)
    if values and not hidden:
        hidden_text = " (values not shown)"
    meant = {name: suggest(name, *known) for name in dict.fromkeys(names) if name.startswith("--")}
    hints = [(name, match) for name, match in meant.items() if match]
    hint_text = ""
    if len(hints) == 1:
        hint_text = f"; did you mean {hints[0][1]}?"
    elif hints:
        hint_text = "; did you mean " + ", ".join(f"{match} (for {name})" for name, match in hints) + "?"
    return f"unrecognized arguments: {' '.join(names)}{hidden_text}{hint_text}"


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="zitadel-beam", description="Bulk user migration into ZITADEL.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log Beam's progress (INFO)")
    groups: dict[tuple[str, ...], argparse._SubParsersAction] = {}
    top = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    top.required = True
    groups[()] = top
    for command in commands():
        path = command.path
        for depth in range(1, len(path)):
            prefix = path[:depth]
            if prefix not in groups:
                sub = groups[path[: depth - 1]].add_parser(prefix[-1], help=f"{prefix[-1]} commands")
                action = sub.add_subparsers(dest=f"sub{depth}", metavar="SOURCE", parser_class=_Parser)
                action.required = True
                groups[prefix] = action
        cmd = groups[path[:-1]].add_parser(path[-1], help=command.help, description=command.help)
        command.add_arguments(cmd)
        cmd.hands_to_beam = command.hands_to_beam
        cmd.set_defaults(
            _run=command.run,
            _path=path,
            _beam=command.hands_to_beam,
            _files=command.files,
            _worker_files=command.worker_files,
            _implied_files=command.implied_files,
        )
    return parser


def _beam_parser() -> argparse.ArgumentParser:
    from apache_beam.options.pipeline_options import PipelineOptions, _BeamArgumentParser

    # Beam's own parser class: its options register through its add_value_provider_argument.
    beam_parser = _BeamArgumentParser(add_help=False, allow_abbrev=False)
    for cls in PipelineOptions.__subclasses__():
        cls._add_argparse_args(beam_parser)  # pylint: disable=protected-access
    return beam_parser


def _beam_flags() -> set[str]:
    """Beam's pipeline options (``--runner``, ``--temp_location``, ...)."""
    return {flag for flag in _beam_parser()._option_string_actions if flag.startswith("--")}


def _check_beam_args(pipeline_args: list[str], own_flags: Sequence[str]) -> None:
    """Reject flags that neither the command nor Beam knows (a typo must not pass silently)."""
    if not pipeline_args:
        return
    beam_parser = _beam_parser()
    _, unknown = beam_parser.parse_known_args(pipeline_args)
    if unknown:
        beam = sorted(flag for flag in beam_parser._option_string_actions if flag.startswith("--"))
        raise ConfigError(unknown_flags(unknown, own_flags, beam))


def _command_flags(parser: argparse.ArgumentParser, path: Sequence[str]) -> list[str]:
    """The long flags of the command at ``path`` (``("migrate", "auth0")``)."""
    current = parser
    for name in path:
        action = next(a for a in current._actions if isinstance(a, argparse._SubParsersAction))
        current = action.choices[name]
    return [flag for flag in current._option_string_actions if flag.startswith("--")]


def _not_beam_import_noise(record: logging.LogRecord) -> bool:
    # `import apache_beam` logs this on the root logger without the optional BigQuery client
    # (which we don't use); it would break "errors are one line on stderr".
    return "apitools not found" not in record.getMessage()


# Beam logs a failing step's traceback (and, in multi-processing mode, relays the worker's) before
# it raises the same error in the launcher, which reports it: as one line when it is a known cause
# (a full disk, an interruption), as a traceback when it is a bug. The log copy is dropped.
_BEAM_FAILURE_LOGGERS = (
    "apache_beam.runners.common",
    "apache_beam.runners.worker",
    "apache_beam.runners.portability",
)


def _not_beam_failure_copy(record: logging.LogRecord) -> bool:
    if record.levelno < logging.ERROR or not record.name.startswith(_BEAM_FAILURE_LOGGERS):
        return True
    return logging.getLogger().isEnabledFor(logging.INFO)  # -v shows them


# What the one line of an interrupted command says was done and how to resume (pipeline/signals.py).
_RESUME = {
    "migrate": "no manifest was written and the temporary files were removed; run the same command "
    "again to start over",
    "push": "bodies the ledger records as done are kept; run the same command again to resume",
    "verify": "nothing was written; run the same command again",
    "export": "no export was written; run the same command again",
    "copy": "the export, bodies and ledger finished so far are kept; run the same command again to resume",
    "companion": "the store and its removals are kept; start it again to go on",
}


def main(argv: Sequence[str] | None = None) -> int:
    if argv is None:
        # The process's entry point (console script, python -m pipeline): signals stop it cleanly.
        # Called with arguments (tests, embedding), the caller's signal handling is left alone.
        signals.install()
    argv = list(sys.argv[1:] if argv is None else argv)
    code = _main(argv)
    if signals.received():
        signals.exit_now(code)
    return code


def _main(argv: list[str]) -> int:
    # Configure logging before the commands import Beam: a root-logger warning logged during
    # that import would otherwise install its own handler and make basicConfig a no-op.
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    logging.getLogger().addFilter(_not_beam_import_noise)
    for handler in logging.getLogger().handlers:
        handler.addFilter(_not_beam_failure_copy)
    emulator_credentials = prepare_emulator_credentials()
    # Also when a signal ends the process (pipeline/signals.py).
    cleanup = register_cleanup(emulator_credentials.restore) if emulator_credentials else 0
    try:
        parser = build_parser()
        known_args, rest = parser.parse_known_args(argv)
        logging.getLogger().setLevel(logging.INFO if known_args.verbose else logging.WARNING)
        signals.set_resume_hint(_RESUME.get(known_args._path[0], "run the same command again"))
        check_paths(known_args, rest)  # before anything slow: a remote runner needs gs:// paths
        check_inputs_read_only(known_args)  # before anything is read: inputs are never written
        own_flags = _command_flags(parser, known_args._path)
        if known_args._beam:
            _check_beam_args(rest, own_flags)
        elif rest:
            raise ConfigError(unknown_flags(rest, own_flags))
        return int(known_args._run(known_args, rest) or 0)
    except BaseException as err:
        if signals.received():  # whatever the runner turned the interruption into
            signals.report()
            return signals.exit_code()
        if isinstance(err, ConfigError):
            print(f"zitadel-beam: error: {err}", file=sys.stderr)
            return 2
        if isinstance(err, KeyboardInterrupt):
            print("zitadel-beam: interrupted", file=sys.stderr)
            return 130
        raise
    finally:
        if emulator_credentials:
            emulator_credentials.restore()
            unregister_cleanup(cleanup)


if __name__ == "__main__":
    sys.exit(main())
