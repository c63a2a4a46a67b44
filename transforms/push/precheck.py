"""Before a push sends anything: the manifest and its bodies agree, and every user is valid.

A manifest that lost a body entry, a body changed since its sha256 was taken, or counts that do
not add up are refused with one line (``ConfigError``) and nothing is sent; invalid users are
counted and named, then left out of the bodies. Called first by ``push_manifest``::

    precheck(load_manifest(path), sys.stderr)
"""

from __future__ import annotations

import glob
import json
import os
import posixpath
import re
from typing import TextIO

from transforms.common.errors import ConfigError
from transforms.files.storage import is_gcs
from transforms.output.body_parts import body_user_ids, orgs_of, shape_problem, users_of
from transforms.output.manifest import BodyRef, Manifest, read_body

__all__ = ["precheck"]


_NUMBERED = re.compile(r"^(?P<stem>.+)-(?P<index>\d{5})-of-(?P<total>\d{5})(?P<ext>\.[^/]*)?$")


def _listing_problems(manifest: Manifest) -> list[str]:
    """Where the manifest's body list and the numbered body files beside it disagree.

    migrate names bodies ``<stem>-00001-of-00003<ext>``: the names say how many there are, so a
    manifest listing two of them, or a third file beside the manifest that it does not list, is
    a body list that lost an entry (or a folder that mixes two runs).
    """
    if manifest.tool == "zitadel-beam push --body":
        return []  # bodies written by other tools or by hand: their names mean nothing
    groups: dict[tuple[str, str, str], dict[int, BodyRef]] = {}
    for ref in manifest.bodies:
        match = _NUMBERED.match(ref.path)
        if match:
            key = (match["stem"], match["total"], match["ext"] or "")
            groups.setdefault(key, {})[int(match["index"])] = ref
    problems = []
    for (stem, total, ext), listed in sorted(groups.items()):
        absent = [i for i in range(1, int(total) + 1) if i not in listed]
        if absent:
            name = posixpath.basename(f"{stem}-{absent[0]:05d}-of-{total}{ext}")
            problems.append(
                f"the manifest lists {len(listed)} of the {int(total)} bodies its names count "
                f"(-of-{total}): {name} is not in it"
            )
        if is_gcs(stem):
            continue
        listed_paths = {os.path.abspath(r.path) for r in manifest.bodies}
        pattern = (
            glob.escape(stem) + "-[0-9][0-9][0-9][0-9][0-9]-of-[0-9][0-9][0-9][0-9][0-9]" + glob.escape(ext)
        )
        strays = sorted(p for p in glob.glob(pattern) if os.path.abspath(p) not in listed_paths)
        if strays:
            problems.append(
                f"{os.path.basename(strays[0])} lies beside the bodies but the manifest does not list it"
                + (f" ({len(strays)} such files)" if len(strays) > 1 else "")
            )
    return problems


def precheck(manifest: Manifest, stream: TextIO) -> int:
    """Before the first request: the manifest and its bodies agree, and every user is valid.
    Returns how many users carry ``passwordChangeRequired`` with a password hash (the admin import
    drops the flag for them: ``change_dropped_by_import``).

    Refused (ConfigError, nothing sent) when a listed body is missing, changed since its sha256
    was taken, not an import request, or holds another number of users than its entry; when
    the entries do not add up to the manifest's counts; or when numbered bodies are missing from
    the list or lie unlisted beside it. Invalid users are counted and named, not sent.
    """
    from transforms.output.body_check import check_body

    problems = _listing_problems(manifest)
    if problems:
        raise ConfigError(f"{manifest.path}: {problems[0]}; nothing was sent")
    reasons: dict[str, int] = {}
    notes: dict[str, int] = {}
    total = forced = 0
    for ref in manifest.bodies:
        try:
            body = json.loads(read_body(ref))
        except FileNotFoundError:
            raise ConfigError(
                f"{ref.name}: listed in {manifest.path} but not found; nothing was sent"
            ) from None
        except OSError as err:
            raise ConfigError(
                f"{ref.name}: cannot be read ({err.strerror or err}); nothing was sent"
            ) from None
        except ValueError as err:  # the sha256 differs (changed since the manifest), or not JSON
            text = str(err) if "sha256" in str(err) else "not JSON"
            raise ConfigError(f"{ref.name}: {text}; nothing was sent") from None
        problem = shape_problem(body)
        if problem:
            raise ConfigError(f"{ref.name}: {problem}; nothing was sent")
        users = len(body_user_ids(body))
        if users != ref.users:
            raise ConfigError(
                f"{ref.name} holds {users} users, its manifest entry says {ref.users}; nothing was sent"
            )
        total += users
        checked = check_body(body)  # the migrate pipelines' rules: an invalid user is never sent
        for failure in checked.rejected:
            reasons[failure["reason"]] = reasons.get(failure["reason"], 0) + 1
        for note, count in checked.notes.items():
            notes[note] = notes.get(note, 0) + count
        forced += change_dropped_by_import(checked.body)
    claimed = manifest.counts
    for key in ("users_written", "human_users_written"):
        if key in claimed and claimed[key] != total:
            raise ConfigError(
                f"{manifest.path}: its bodies hold {total} users, its counts say {claimed[key]} "
                f"({key}); nothing was sent"
            )
    if "bodies_written" in claimed and claimed["bodies_written"] != len(manifest.bodies):
        raise ConfigError(
            f"{manifest.path}: it lists {len(manifest.bodies)} bodies, its counts say "
            f"{claimed['bodies_written']} (bodies_written); nothing was sent"
        )
    if reasons:
        stream.write(
            f"push: {sum(reasons.values())} invalid user(s) will not be sent ("
            + ", ".join(f"{k} {v}" for k, v in sorted(reasons.items()))
            + ")\n"
        )
    if notes:  # the same fixes as migrate: the field is dropped, the user is sent
        stream.write(
            "push: fields dropped as migrate does ("
            + ", ".join(f"{k} {v}" for k, v in sorted(notes.items()))
            + ")\n"
        )
    stream.flush()
    return forced


def change_dropped_by_import(body: dict) -> int:
    """Users with ``passwordChangeRequired`` and a password hash: the admin import drops the flag
    whenever a hash is given (internal/command/user_human.go ``createAddHumanEvent``:
    ``AddPasswordData(human.HashedPassword, false)``), the user service keeps it
    (``hashedPassword.changeRequired``)."""
    count = 0
    for org in orgs_of(body):
        for entry in users_of(org):
            user = entry.get("user") if isinstance(entry, dict) else None
            if isinstance(user, dict) and user.get("passwordChangeRequired"):
                count += bool((user.get("hashedPassword") or {}).get("value"))
    return count
