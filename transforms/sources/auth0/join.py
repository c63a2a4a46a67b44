"""The Auth0 reader's join: one partition's profiles meet their password records, OTP secrets and roles.

For whoever changes which password a user gets, or how a rejected user's records are accounted
for. The parse step (``parse``) already mapped and validated each profile; here only small
items are matched (item shapes: ``items``), the chosen hash is spliced into the encoded
user (``with_password``, ``with_otp``) and each user becomes one ``records.EncodedRow``::

    (partition, [(PROFILES, blob), (PASSWORDS, blob), (MFA, blob), ...]) ─ JoinPartition ─► (partition, rows blob)
                                                                            ├─► dead letters
                                                                            └─► roles (with --project-id)

The newest password record of a user wins (``password-superseded`` for the others), the last OTP
record wins (``otp-superseded``); a user rejected here takes its password, OTP and role records
with it (``profile-rejected``).
"""

from __future__ import annotations

import pickle
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

import apache_beam as beam
import orjson
from apache_beam.metrics import Metrics

from transforms.common import counters, live_tally
from transforms.common.records import NAMESPACE, EncodedRow, encoded_row, intern_tallies, no_gc, pack_rows
from transforms.common.records import dead_letter as _dead_letter
from transforms.files.spill import load_blob, write_spill
from transforms.hashing.convert import ConvertedHash, parse_hash
from transforms.hashing.policy import CONFIG_REASONS, DROPPABLE_REASONS
from transforms.hashing.tally import HashTally, passwordless
from transforms.mapping.validate import Reason, check_hash
from transforms.sources.auth0 import items as a0
from transforms.sources.auth0.items import (
    EMBEDDED_UNUSED_PREFIX,
    MFA_SOURCE,
    PROFILE_SOURCE,
    ROLE_RECORDS_JOINED,
    SOURCES,
    Kind,
    OtpItem,
    PasswordItem,
    Problem,
    ProfileItem,
    RoleItem,
)
from transforms.sources.auth0.mapping import pick_profile
from transforms.sources.auth0.options import Auth0Options
from transforms.sources.auth0.parse import DEAD
from transforms.sources.role_grants import JoinRoles

__all__ = ["ROLES", "with_password", "with_otp"]

ROLES = "roles"

_Routed = TypeVar("_Routed", OtpItem, RoleItem)

# Dead letters of one user, yielded by the join after the user (``TaggedOutput`` elements).
_Letters = list[beam.pvalue.TaggedOutput]


def _counter(name: str):
    return Metrics.counter(NAMESPACE, name)


def _with_user_fields(entry_json: bytes, fields: bytes) -> bytes:
    """Append encoded ``,"key":value`` pairs as the last fields of ``user`` in an encoded entry
    (``map_profile`` puts ``user`` last in the entry, so the entry ends with ``}}``)."""
    return entry_json[:-2] + fields + b"}}"


def with_password(entry_json: bytes, password_hash: str) -> bytes:
    """Append ``hashedPassword`` as the last field of ``user`` in an encoded entry.

    ``map_profile`` puts ``user`` last in the entry and ``hashedPassword`` last in the user, so
    this gives exactly the bytes of encoding the entry with the hash (tested against it).
    """
    return _with_user_fields(entry_json, b',"hashedPassword":{"value":' + orjson.dumps(password_hash) + b"}")


def with_otp(entry_json: bytes, secret: str) -> bytes:
    """Append ``otpCode`` (a base32 TOTP secret) as the last field of ``user``."""
    return _with_user_fields(entry_json, b',"otpCode":' + orjson.dumps(secret))


class _PartitionItems:
    """One partition's items, read from their spill files and sorted into input order."""

    def __init__(self, blobs: Iterable[tuple[int, str]]):
        self.profiles: list[ProfileItem] = []
        self.passwords: list[PasswordItem] = []
        self.otps: list[OtpItem] = []
        self.role_records: list[RoleItem] = []
        for kind, spilled in blobs:
            items = pickle.loads(load_blob(spilled))
            if kind == Kind.PROFILES:
                self.profiles.extend(items)
            elif kind == Kind.MFA:
                self.otps.extend(items)
            elif kind == Kind.ROLE_RECORDS:
                self.role_records.extend(items)
            else:
                self.passwords.extend(items)
        self.profiles.sort(key=_sortkey)
        self.passwords.sort(key=_sortkey)
        self.otps.sort(key=_sortkey)
        self.role_records.sort(key=_sortkey)
        # Where each profile sits in ``profiles``, by e-mail key and by sortkey; its user id.
        self.by_email: dict[str, list[int]] = {}
        self.by_sortkey: dict[tuple[int, int], int] = {}
        self.user_ids: list[str] = []
        for index, (file_index, position, email_key, user_id, _, _, _, _, _, _, _) in enumerate(
            self.profiles
        ):
            self.by_email.setdefault(email_key, []).append(index)
            self.by_sortkey[(file_index, position)] = index
            self.user_ids.append(user_id)

    def by_profile(self, items: Iterable[_Routed]) -> dict[int, list[_Routed]]:
        """OTP or role items (in input order) by the index of the profile they were routed to."""
        out: dict[int, list[_Routed]] = {}
        for item in items:
            (_, _, target_file, target_position, _, _) = item
            out.setdefault(self.by_sortkey[(target_file, target_position)], []).append(item)
        return out


class _JoinPartitionFn(beam.DoFn):
    """Match the password records (and OTP secrets) of one partition to their profiles; emit rows."""

    def __init__(self, options: Auth0Options, tmp_dir: str):
        self._options = options
        self._tmp_dir = tmp_dir

    def setup(self):
        self._conflicts = _counter(a0.PASSWORD_CONFLICTS)
        self._tally = HashTally()
        self._notes: dict[str, Any] = {}

    def process(self, element: tuple[int, Iterable[tuple[int, str]]]):
        part, blobs = element
        with no_gc():
            yield from self._join(part, blobs)
        self._tally.publish()

    def _embedded_unused(self, why: str) -> None:
        """Count a profile's own hash that is not used and gets no dead-letter line of its own."""
        name = f"{EMBEDDED_UNUSED_PREFIX}{why}"
        if name not in self._notes:
            self._notes[name] = _counter(name)
        self._notes[name].inc()

    def _join(self, part: int, blobs: Iterable[tuple[int, str]]):
        items = _PartitionItems(blobs)
        letters: _Letters = []
        assigned = self._assign(items, letters)
        yield from letters
        letters.clear()
        otps = items.by_profile(items.otps)
        held = items.by_profile(items.role_records)
        roles = JoinRoles(self._options.roles_project, joined=ROLE_RECORDS_JOINED)
        rows: list[EncodedRow] = []
        for index, item in enumerate(items.profiles):
            row = self._user(item, assigned.get(index), otps.get(index), held.get(index, ()), roles, letters)
            if row is not None:
                rows.append(row)
            if letters:
                yield from letters
                letters.clear()
        live_tally.add(live_tally.CONVERTED, len(items.profiles))
        if rows:
            yield part, write_spill(self._tmp_dir, f"rows-p{part:03d}.pkl", pack_rows(rows))
        if self._options.roles_project is not None:
            yield beam.pvalue.TaggedOutput(ROLES, roles.publish())

    def _assign(self, items: _PartitionItems, letters: _Letters) -> dict[int, list[PasswordItem]]:
        """Password items by the index of their profile: a custom hash goes to the profile that
        carries it; a password record to the one profile its e-mail and id pick, else a dead letter."""
        assigned: dict[int, list[PasswordItem]] = {}
        for pw in items.passwords:
            (file_index, position, email_key, oid, _, _, raw, kind, target) = pw
            if kind == Kind.CUSTOM_HASHES and target is not None:  # carried by its profile
                assigned.setdefault(items.by_sortkey[target], []).append(pw)
                continue
            candidates = items.by_email.get(email_key, [])
            choice = pick_profile(oid, [items.user_ids[i] for i in candidates])
            if choice is not None:
                assigned.setdefault(candidates[choice], []).append(pw)
                continue
            reason = Reason.ORPHAN_PASSWORD if not candidates else Reason.AMBIGUOUS_PASSWORD
            detail = (
                "no profile has this e-mail"
                if not candidates
                else f"{len(candidates)} profiles share this e-mail and none matches the record's id"
            )
            letters.append(_dl((file_index, position), reason, detail, Kind.PASSWORDS, raw))
        return assigned

    def _user(
        self,
        item: ProfileItem,
        passwords: list[PasswordItem] | None,
        otps: list[OtpItem] | None,
        held: Sequence[RoleItem],
        roles: JoinRoles,
        letters: _Letters,
    ) -> EncodedRow | None:
        """One profile with its records → its row, or None (then its records are dead letters)."""
        (file_index, position, _, user_id, name_key, problem, entry_json, meta_json, written, raw, names) = (
            item
        )
        tallies, line = written
        chosen = self._newest_password(passwords, letters) if passwords else None
        otp = self._latest_otp(otps, letters) if otps else None
        verifier = ""
        extra: list[str] = []  # counter names of the user once written, beyond the parse step's
        if problem is None and chosen is not None:
            chosen, problem, verifier, dropped = self._check_hash(item, chosen, letters)
            if dropped is not None:
                more, line = dropped
                extra += more
            if chosen is not None and problem is None:
                (_, _, _, _, _, password_hash, _, _, _) = chosen
                entry_json = with_password(entry_json, password_hash)
        joined = tuple(record_names for _, _, _, _, record_names, _ in held) if held else ()
        grants = roles.user(names, joined, dead=problem is not None)
        if problem is not None:
            self._reject(problem, chosen, otp, held, letters)
            return None
        companions = []
        if chosen is not None:
            (pw_file, pw_position, _, _, _, _, pw_raw, kind, _) = chosen
            companions.append([[pw_file, pw_position], SOURCES[kind], orjson.Fragment(pw_raw)])
        if otp is not None:
            (otp_file, otp_position, _, _, secret, otp_raw) = otp
            entry_json = with_otp(entry_json, secret)
            companions.append([[otp_file, otp_position], MFA_SOURCE, orjson.Fragment(otp_raw)])
        if chosen is None and b'"hashedPassword":' not in entry_json and b'"idps":[' not in entry_json:
            extra.append(counters.CANNOT_SIGN_IN + a0.PREFIX)  # neither a password nor a linked IdP
        return encoded_row(
            file_index=file_index,
            position=position,
            user_id=user_id,
            name_key=name_key,
            entry_json=entry_json,
            metadata_json=meta_json,
            password=verifier,
            source=PROFILE_SOURCE,
            record_json=raw,
            companions_json=orjson.dumps(companions) if companions else b"",
            grants=grants,
            tallies=intern_tallies((*tallies, *extra)) if extra else tallies,
            passwordless=line,
        )

    def _newest_password(self, passwords: list[PasswordItem], letters: _Letters) -> PasswordItem:
        """The newest record wins; without dates, the later file (password exports are listed
        after profile files, so a password record beats a custom_password_hash)."""
        passwords.sort(key=_password_order)
        for older in passwords[:-1]:
            self._conflicts.inc()
            (file_index, position, _, _, _, _, raw, kind, _) = older
            if kind == Kind.CUSTOM_HASHES:
                # Embedded in a profile that is written: no line of its own (the profile is no
                # rejected record); the accounting counts it here.
                self._embedded_unused("superseded")
                continue
            letters.append(
                _dl(
                    (file_index, position),
                    Reason.PASSWORD_SUPERSEDED,
                    "a newer password record exists for this user",
                    kind,
                    raw,
                )
            )
        return passwords[-1]

    def _latest_otp(self, otps: list[OtpItem], letters: _Letters) -> OtpItem:
        """The last OTP record in input order wins (an MFA export after the profiles' own)."""
        *older_otps, otp = otps
        for file_index, position, _, _, _, raw in older_otps:
            letters.append(
                _dl(
                    (file_index, position),
                    Reason.OTP_SUPERSEDED,
                    "a later OTP record exists for this user",
                    Kind.MFA,
                    raw,
                )
            )
        return otp

    def _check_hash(
        self, item: ProfileItem, chosen: PasswordItem, letters: _Letters
    ) -> tuple[PasswordItem | None, Problem | None, str, tuple[list[str], bytes] | None]:
        """``(password item, problem, verifier, dropped)`` after checking the chosen hash: a hash
        the target cannot verify rejects the user, or with --on-unsupported-hash=import-without-password
        is dropped (the user comes without it; ``dropped``: the counter names and passwordless
        line of the user once written)."""
        (file_index, position, _, user_id, _, _, entry_json, _, _, raw, _) = item
        (pw_file, pw_position, _, _, _, password_hash, pw_raw, kind, _) = chosen
        checked = check_hash(password_hash, self._options.validation)
        if isinstance(checked, ConvertedHash):
            self._tally.add(checked)
            return chosen, None, checked.verifier, None
        reason, detail = checked
        refused: ConvertedHash | None = None
        if reason in CONFIG_REASONS:  # the summary prints the config that admits it
            parsed = parse_hash(password_hash)
            refused = parsed if isinstance(parsed, ConvertedHash) else None
        if self._options.drop_bad_hashes and reason in DROPPABLE_REASONS:
            name, line = passwordless(reason, user_id or None, _email_of(entry_json))
            names = [a0.IMPORTED_WITHOUT_PASSWORD, name]
            refused_name = self._tally.refused_name(refused)
            if refused_name is not None:
                names.append(refused_name)
            letters.append(
                _dl(
                    (pw_file, pw_position), reason, f"{detail} (user imported without password)", kind, pw_raw
                )
            )
            return None, None, "", (names, line)
        self._tally.refused(refused)
        # The profile was fine; the hash is not: reject both.
        letters.append(_dl((file_index, position), reason, detail, Kind.PROFILES, raw))
        return chosen, checked, "", None

    def _reject(
        self,
        problem: Problem,
        chosen: PasswordItem | None,
        otp: OtpItem | None,
        held: Sequence[RoleItem],
        letters: _Letters,
    ) -> None:
        """A rejected profile's password, OTP and role records: ``profile-rejected``."""
        reason, _ = problem
        detail = f"its profile was dead-lettered ({reason})"
        for file_index, position, _, _, _, raw in held:
            letters.append(
                _dl((file_index, position), Reason.PROFILE_REJECTED, detail, Kind.ROLE_RECORDS, raw)
            )
        if chosen is not None:
            (pw_file, pw_position, _, _, _, _, pw_raw, kind, _) = chosen
            if kind == Kind.CUSTOM_HASHES:
                # The hash travels inside the profile's dead-letter line: one line per rejected
                # input record (README "Dead-letter reasons").
                self._embedded_unused("profile-rejected")
            else:
                letters.append(_dl((pw_file, pw_position), Reason.PROFILE_REJECTED, detail, kind, pw_raw))
        if otp is not None:
            (otp_file, otp_position, _, _, _, otp_raw) = otp
            letters.append(_dl((otp_file, otp_position), Reason.PROFILE_REJECTED, detail, Kind.MFA, otp_raw))


def _sortkey(item: tuple) -> tuple[int, int]:
    return item[0], item[1]


def _password_order(item: PasswordItem) -> tuple[str, int, int]:
    (file_index, position, _, _, date, _, _, _, _) = item
    return date, file_index, position


def _email_of(entry_json: bytes) -> str | None:
    """The e-mail of a mapped user entry (for the passwordless listing; rare, so parsed here)."""
    try:
        return orjson.loads(entry_json)["user"]["email"]["email"]
    except (orjson.JSONDecodeError, KeyError, TypeError):
        return None


def _dl(sortkey: tuple[int, int], reason: str, detail: str, kind: int, raw: bytes):
    return beam.pvalue.TaggedOutput(
        DEAD, _dead_letter(sortkey, reason, detail, SOURCES[kind], orjson.Fragment(raw))
    )
