"""``zitadel-beam push``: send the import bodies of a manifest to the admin import endpoint.

Examples::

    ZITADEL_TOKEN=$(cat pat.txt) zitadel-beam push --url=https://my.zitadel.cloud \\
        --manifest=out/importBody.manifest.json
    zitadel-beam push --url=... --manifest=... --key-file=sa-key.json --concurrency=2 --verify
    zitadel-beam push --url=... --manifest=... --client-id=importer --client-secret-file=secret.txt

The flags, the locks and the report are the one push entry's (``pipeline/push_entry.py``, which
``migrate --push-url`` and ``copy`` share); the work (probe, ledger and resume, retries, halving
after a server timeout, per-user results) is done by ``transforms/push/engine.py``; its
docstring lists the steps. With ``--gcs-document``
the request is handed to ``pipeline/gcs_import.py`` instead.

Exit status: 0 when every user is created or present, 1 otherwise, 2 for configuration errors.
"""

from __future__ import annotations

import argparse
import os

from pipeline.gcs_import import run_gcs_push
from pipeline.options import add_credential_arguments, add_gcs_arguments, credentials_from_args
from pipeline.push_entry import add_pace_arguments, push_settings, run_push, show
from transforms.common.errors import ConfigError
from transforms.hashing.policy import HashPolicy, load_policy
from transforms.output.manifest import write_body_manifest
from transforms.push.api_choice import API_CHOICES

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url", required=True, help="ZITADEL instance base URL, e.g. https://x.zitadel.cloud"
    )
    parser.add_argument("--manifest", help="the <stem>.manifest.json written by migrate")
    parser.add_argument(
        "--body",
        action="append",
        default=[],
        help="instead of --manifest: an ImportDataRequest body written by another tool or by "
        "hand (repeatable, sent in order; <stem>.push.manifest.json is written in the "
        "current folder, for resume and --verify). Every user is validated first, with "
        "migrate's rules and reason codes: invalid ones are reported, not sent",
    )
    parser.add_argument("--results", help="ledger folder (default: <manifest stem>.results/ beside it)")
    add_pace_arguments(parser)
    parser.add_argument("--verify", action="store_true", help="run verify when the push is done")
    add_api_argument(parser)
    parser.add_argument(
        "--break-lock",
        action="store_true",
        help="remove another push's lock on this ledger, or on the sync state (docs/sync.md), "
        "only when that run is certainly gone",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress line on stderr")
    parser.add_argument(
        "--zitadel-config",
        metavar="FILE",
        default=None,
        help="the target's config YAML: warn before sending when its password verifiers or "
        "limits do not cover the manifest's hashes (default: the config migrate was given, "
        "recorded in the manifest, else ZITADEL's defaults)",
    )
    add_credential_arguments(parser)
    add_gcs_arguments(parser)


def add_api_argument(parser: argparse.ArgumentParser | argparse._ArgumentGroup, flag: str = "--api") -> None:
    """``--api``: the admin import or the user service v2 (docs/user-v2.md)."""
    parser.add_argument(
        flag,
        dest="api",
        choices=API_CHOICES,
        default="auto",
        help="how users go in: admin-import (POST /admin/v1/import, an instance-level credential), "
        "user-v2 (one user service call per user; an org's user manager suffices), or auto "
        "(default): the admin import where the credential may use it, else the user service",
    )


def run(known_args: argparse.Namespace, pipeline_args: list[str]) -> int:
    del pipeline_args  # push has no Beam options; the CLI already rejected unknown flags
    if getattr(known_args, "gcs_document", None):
        return run_gcs_push(known_args)
    settings = push_settings(
        known_args,
        verify=known_args.verify,
        progress=not known_args.quiet,
        results=known_args.results,
        break_lock=known_args.break_lock,
        hash_policy=_own_hash_policy(known_args),
    )
    if bool(known_args.manifest) == bool(known_args.body):
        raise ConfigError("give either --manifest or --body (one or more)")
    manifest_path = known_args.manifest or write_body_manifest(known_args.body)
    return show(run_push(manifest_path, known_args.url, credentials_from_args(known_args), settings))


def _own_hash_policy(known_args: argparse.Namespace) -> HashPolicy | None:
    """push's own target config (``--zitadel-config``, or the variables changing ZITADEL's
    defaults); None: the hash check uses what migrate recorded in the manifest."""
    policy = load_policy(known_args.zitadel_config, os.environ)
    return policy if known_args.zitadel_config or policy != HashPolicy() else None
