"""``zitadel-beam export``: write a ZITADEL instance's organizations as an export document.

Examples::

    ZITADEL_TOKEN=$(cat source-pat.txt) zitadel-beam export --url=https://source.zitadel.cloud \\
        --with-passwords --with-otp --output=work/export.json
    zitadel-beam export --url=... --token-file=pat --org-ids=1234,5678 --output=gs://B/export.json
    zitadel-beam export --url=... --token-file=pat --with-passwords \\
        --gcs-output=gs://B/exports/export.json --service-account=sa-writer.json

``POST /admin/v1/export`` (docs/instance-moves.md) with ``responseOutput`` answers with the document itself;
it is written exactly as it came, mode 0600 (with ``--with-passwords`` it holds password hashes),
then read once as a stream to check it is a complete export and to count what it holds.
``--gcs-output`` instead asks the server to write the document to the bucket itself
(``gcsOutput``, the service-account file base64-encoded), for exports too large to pass through
this client; the account needs Storage Object Creator on the bucket.

The export does not carry: global (instance) policies, IAM members, global IdPs, global
second/multi factors, machine keys, personal access tokens, passkeys, deactivated states of
orgs and users, or event history (see docs/instance-moves.md).
"""

from __future__ import annotations

import argparse

from pipeline.options import add_credential_arguments, add_export_selection_arguments, credentials_from_args
from transforms.common.errors import ConfigError
from transforms.files.locks import acquire_lock, lock_path_for
from transforms.files.storage import check_local_outputs
from transforms.push.instance_moves import export_document, export_request
from transforms.zitadel_api.client import connect

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--url", required=True, help="the source instance's base URL, e.g. https://x.zitadel.cloud"
    )
    parser.add_argument("--output", help="where the document goes: a local path or gs:// (mode 0600)")
    parser.add_argument("--gcs-output", help="instead of --output: gs://bucket/path the *server* writes to")
    parser.add_argument(
        "--service-account", help="service-account JSON key file for --gcs-output (sent base64-encoded)"
    )
    add_export_selection_arguments(parser)
    parser.add_argument(
        "--timeout", default="30m0s", help="server-side timeout of the export, a Go duration (default 30m0s)"
    )
    add_credential_arguments(parser)
    parser.add_argument(
        "--break-lock",
        action="store_true",
        help="remove another run's lock on this --output (only when that run is certainly gone)",
    )


def run(known_args: argparse.Namespace, pipeline_args: list[str]) -> int:
    del pipeline_args
    if bool(known_args.output) == bool(known_args.gcs_output):
        raise ConfigError("give either --output or --gcs-output")
    request = export_request(
        known_args.org_ids,
        known_args.excluded_org_ids,
        known_args.with_passwords,
        known_args.with_otp,
        known_args.timeout,
        known_args.gcs_output,
        known_args.service_account,
    )
    client = connect(known_args.url, credentials_from_args(known_args))
    if not known_args.output:
        summary = export_document(client, request, None)
        print(summary.text())
        return 0
    check_local_outputs({"--output": known_args.output})
    with acquire_lock(
        lock_path_for(known_args.output),
        what=f"export --output={known_args.output}",
        break_lock=known_args.break_lock,
    ):
        summary = export_document(client, request, known_args.output)
    print(summary.text())
    return 0
