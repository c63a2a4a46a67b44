"""``zitadel-beam push --gcs-document``: import an export document that already sits in a bucket.

Examples::

    zitadel-beam push --url=https://target.zitadel.cloud --token-file=pat \\
        --gcs-document=gs://B/exports/export.json --service-account=sa-reader.json --verify --wait=30m

The request is ``dataOrgsv1Gcs`` (docs/instance-moves.md): ``{bucket, path,
serviceaccountJson}`` with the key file base64-encoded; the account needs Storage Object Viewer.
The server answers **at once with an empty body** and runs the import detached, until the
request's ``--timeout``: there is no per-user result, no error list, and a failure shows only in
the server's logs. ``verify`` is therefore the only proof: with ``--verify`` this command reads the
document itself (streamed, through the local Google credentials) for the human user ids, then
polls events search until every one of them has a ``user.human.added`` event or ``--wait`` runs
out. The document is sent as one import: split large ones with ``migrate zitadel`` and push the
bodies instead when the server-side timeout would not suffice.
"""

from __future__ import annotations

import argparse
import json
import sys

from pipeline.options import credentials_from_args, flag_seconds
from transforms.common.errors import ConfigError
from transforms.push.instance_moves import document_user_ids, gcs_import_request
from transforms.push.verification import wait_until_added
from transforms.zitadel_api import api_errors
from transforms.zitadel_api.client import connect

__all__ = ["run_gcs_push"]


def run_gcs_push(known_args: argparse.Namespace) -> int:
    """``push --gcs-document``: send the request, then (``--verify``) poll until the users are there."""
    if known_args.manifest or known_args.body:
        raise ConfigError("give --gcs-document or --manifest/--body, not both")
    request = gcs_import_request(known_args.gcs_document, known_args.service_account, known_args.timeout)
    wait = flag_seconds("--wait", known_args.wait)
    expected = document_user_ids(known_args.gcs_document) if known_args.verify else {}
    client = connect(known_args.url, credentials_from_args(known_args))
    try:
        answer = client.import_data(json.dumps(request).encode(), 60.0)
    except api_errors.AdminApiError as err:
        raise ConfigError(f"{client.base_url}: the import request was refused: {err.message}") from None
    print(
        f"push: {client.base_url} accepted {known_args.gcs_document} for a detached import "
        f"(timeout {request['timeout']}); the server returns no per-user result"
        + (f" (answer: {json.dumps(answer)[:200]})" if answer else "")
    )
    if not known_args.verify:
        print(
            "push: run `zitadel-beam push --gcs-document=... --verify` or check the users in the target: "
            "verify is the only proof that the import worked"
        )
        return 0
    total = sum(len(v) for v in expected.values())

    def polling(report) -> None:
        if not known_args.quiet:
            print(
                f"verify: {report.created}/{total} users added so far; polling", file=sys.stderr, flush=True
            )

    report = wait_until_added(client, expected, wait, known_args.poll_interval, polling)
    print(report.table())
    return 0 if report.ok else 1
