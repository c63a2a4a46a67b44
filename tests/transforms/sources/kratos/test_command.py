"""``migrate kratos`` (transforms/sources/kratos/): the mapping and Kratos's hash forms as units, then
the CLI end to end on the bundled sample (examples/kratos/identities-page-1.json, an admin API page
with include_credential=password and totp), field by field, every written hash verified against
its documented password with passwap's rules, the CLI and NDJSON forms, the first look at files,
push and two ``--state`` nights in which an identity made inactive at Kratos is deactivated."""

from __future__ import annotations

import base64
import gzip
import json
import re
from pathlib import Path

import passwap_rules
import pytest
from repo_files import DATA_DIR, ROOT
from zitadel_fixtures import PAT, leaked_secrets
from zitadel_server import ZitadelServer

from pipeline.cli import main
from transforms.common.errors import ConfigError
from transforms.common.reasons import Reason
from transforms.hashing.forms import to_passwap
from transforms.hashing.policy import OnUnsupportedHash
from transforms.sources.kratos.command import parse_traits
from transforms.sources.kratos.mapping import KratosOptions, MappedUser, Refusal, map_identity, passwap_form
from transforms.sources.kratos.read import ARRAY, LINES, PAGE, VALUES, file_layout

SAMPLE = ROOT / "examples" / "kratos" / "identities-page-1.json"
SAMPLES = ROOT / "docs" / "export-formats" / "samples"
ENABLED = DATA_DIR / "zitadel-config" / "verifiers-enabled.yaml"
VECTORS = json.loads((DATA_DIR / "kratos" / "hash_vectors.json").read_text(encoding="utf-8"))["vectors"]
ORG = "123456789"
ANA, BEN, CEM, DAN, EVA = (
    "0e6b1c5c-5a6e-4a8d-9d3f-1b0f4c2e7a91",
    "1f7c2d6d-6b7f-4b9e-8e4a-2c1a5d3f8b02",
    "2a8d3e7e-7c8a-4cae-9f5b-3d2b6e4a9c13",
    "3b9e4f8f-8d9b-4dbf-8a6c-4e3c7f5bad24",
    "4caf5a9a-9eac-4ec0-9b7d-5f4d8a6cbe35",
)
FAY, GUS, HAL, IVY = (
    "5db06bab-afbd-4fd1-8c8e-6a5e9b7dcf46",
    "6ec17cbc-b0ce-40e2-9d9f-7b6fac8ed057",
    "7fd28dcd-c1df-41f3-8ea0-8c7abd9fe168",
    "80e39ede-d2e0-4204-8fb1-9d8bcea0f279",
)


def _passwords() -> dict[str, str]:
    """The sample's passwords by user name (docs/export-formats/samples/kratos-passwords.md)."""
    rows = re.findall(r"^\| (\w+) \| `([^`]+)` \|", (SAMPLES / "kratos-passwords.md").read_text(), re.M)
    return dict(rows)


def sync_sample(tmp_path: Path) -> list[str]:
    """The flags of a run on the bundled sample (tests/pipeline/test_migrate.py syncs with it)."""
    return [f"--identities={SAMPLE}", f"--zitadel-config={ENABLED}"]


# --------------------------------------------------------------------------- units


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["value"][:22])
def test_every_kratos_hash_form_verifies_its_password_or_is_refused_with_its_reason(vector):
    form = passwap_form(vector["value"])
    outcome = to_passwap(form) if isinstance(form, str) else None
    code = form.code if not isinstance(form, str) else (outcome.code if outcome is not None else None)
    assert code == vector["refused"], (form, outcome)
    if vector["refused"] is None:
        assert outcome is not None and outcome.encoded is not None
        assert passwap_rules.verify(outcome.encoded, vector["password"]) is True
        assert passwap_rules.verify(outcome.encoded, vector["password"] + "x") is False


def _identity(**extra: object) -> dict[str, object]:
    identity: dict[str, object] = {
        "id": "i1",
        "schema_id": "default",
        "state": "active",
        "traits": {"email": "ann@example.com", "name": {"first": "Ann", "last": "Lee"}},
        "verifiable_addresses": [{"value": "ANN@example.com", "verified": True, "via": "email"}],
    }
    identity.update(extra)
    return identity


def _mapped(identity: dict[str, object], **options: object) -> MappedUser:
    mapped = map_identity(identity, KratosOptions(**options))  # type: ignore[arg-type]
    assert isinstance(mapped, MappedUser), mapped
    return mapped


def test_addresses_are_verified_each_by_its_own_entry():
    body = _mapped(_identity()).entry["user"]
    assert body["email"] == {"email": "ann@example.com", "isEmailVerified": True}
    assert (
        body["profile"] == {"firstName": "Ann", "lastName": "Lee"} and body["userName"] == "ann@example.com"
    )
    other = _identity(verifiable_addresses=[{"value": "old@example.com", "verified": True, "via": "email"}])
    assert _mapped(other).entry["user"]["email"] == {"email": "ann@example.com"}  # type: ignore[index]
    phone = _identity(
        traits={"email": "ann@example.com", "phone": "+49 151 1234"},
        verifiable_addresses=[
            {"value": "ann@example.com", "verified": False, "via": "email", "status": "sent"},
            {"value": "+49 151 1234", "verified": True, "via": "sms"},
        ],
    )
    body = _mapped(phone).entry["user"]
    assert body["email"] == {"email": "ann@example.com"}  # type: ignore[index]
    assert body["phone"] == {"phone": "+491511234", "isPhoneVerified": True}  # type: ignore[index]


def test_traits_of_a_custom_schema_are_read_where_traits_says():
    identity = _identity(
        traits={
            "contact": {"mail": "bo@example.com"},
            "handle": "bo",
            "given": "Bo",
            "family": "Ng",
            "plan": "x",
        },
        verifiable_addresses=[],
    )
    traits = parse_traits("email=contact.mail, username=handle,first_name=given,last_name=family")
    mapped = _mapped(identity, traits=traits, metadata=True)
    body = mapped.entry["user"]
    assert body["userName"] == "bo" and body["email"] == {"email": "bo@example.com"}  # type: ignore[index]
    assert body["profile"] == {"firstName": "Bo", "lastName": "Ng"}  # type: ignore[index]
    assert mapped.unmapped_traits == ("plan",)
    assert {m["key"]: base64.b64decode(m["value"]) for m in mapped.metadata} == {"traits.plan": b"x"}
    with pytest.raises(ConfigError, match="--traits 'mail=contact.mail'"):
        parse_traits("mail=contact.mail")
    # No e-mail trait: the first verifiable e-mail address stands in.
    no_trait = _identity(
        traits={"username": "cy"}, verifiable_addresses=[{"value": "cy@example.com", "via": "email"}]
    )
    assert _mapped(no_trait).entry["user"]["email"] == {"email": "cy@example.com"}  # type: ignore[index]


def test_state_credentials_links_totp_and_metadata():
    assert map_identity(_identity(state="inactive"), KratosOptions()) == Refusal(
        Reason.BLOCKED, "state inactive at Kratos (--include-blocked imports such users)"
    )
    assert _mapped(_identity(state="inactive"), include_blocked=True).inactive is True
    assert _mapped(_identity()).why_none == "no-credentials"  # kratos list identities
    assert _mapped(_identity(credentials={"password": {"type": "password"}})).why_none == "not-exported"
    hook = {"password": {"config": {"hashed_password": "", "use_password_migration_hook": True}}}
    assert _mapped(_identity(credentials=hook)).why_none == "migration-hook"
    oidc = {
        "oidc": {"identifiers": ["google:1:2", "github:99"]},
        "saml": {"identifiers": ["okta:x"], "config": {"providers": [{"provider": "okta", "subject": "s1"}]}},
        "webauthn": {"identifiers": ["k"]},
        "totp": {"config": {"totp_url": "otpauth://totp/X:ann?secret=jbswy3dpehpk3pxp&issuer=X"}},
    }
    mapped = _mapped(_identity(credentials=oidc), idp_map=(("google", "g1"), ("okta", "o1")))
    body = mapped.entry["user"]
    assert [(link["configId"], link["externalUserId"]) for link in body["idps"]] == [
        ("g1", "1:2"),
        ("o1", "s1"),
    ]  # type: ignore[index]
    assert mapped.links == [("linked", "google"), ("unmapped", "github"), ("linked", "okta")]
    assert body["otpCode"] == "JBSWY3DPEHPK3PXP" and mapped.other_credentials == ["webauthn"]  # type: ignore[index]
    for url, cause in (
        ("otpauth://totp/X?secret=JBSWY3DPEHPK3PXP&algorithm=SHA256", "algorithm-SHA256"),
        ("otpauth://totp/X?secret=JBSWY3DPEHPK3PXP&digits=8", "digits-8"),
        ("otpauth://hotp/X?secret=JBSWY3DPEHPK3PXP", "type-hotp"),
        ("otpauth://totp/X?secret=1", "unreadable-secret"),
    ):
        totp = {"totp": {"config": {"totp_url": url}}}
        assert _mapped(_identity(credentials=totp)).totp_not_carried == [cause]
    assert _mapped(_identity(credentials={"totp": {"type": "totp"}})).totp_not_carried == ["not-exported"]
    meta = _identity(external_id="e-1", metadata_public={"plan": "pro"}, metadata_admin=[1, 2])
    entries = {m["key"]: base64.b64decode(m["value"]) for m in _mapped(meta, metadata=True).metadata}
    assert entries == {"external_id": b"e-1", "public.plan": b"pro", "admin": b"[1,2]"}


def test_a_hash_zitadel_cannot_verify_dead_letters_or_comes_without_password():
    sha3 = next(v["value"] for v in VECTORS if v["value"].startswith("$pbkdf2-sha384"))
    identity = _identity(credentials={"password": {"config": {"hashed_password": sha3}}})
    refused = map_identity(identity, KratosOptions())
    assert isinstance(refused, Refusal) and refused.reason == Reason.UNSUPPORTED_PBKDF2_DIGEST
    kept = _mapped(identity, on_unsupported_hash=OnUnsupportedHash.IMPORT_WITHOUT_PASSWORD)
    assert "hashedPassword" not in kept.entry["user"] and kept.dropped is not None  # type: ignore[operator]


def test_each_file_layout_is_told_from_its_head(tmp_path):
    for name, layout in (
        ("kratos-admin-identities.json", ARRAY),
        ("kratos-cli-list-identities.json", PAGE),
        ("kratos-identities.ndjson", LINES),
    ):
        path = SAMPLES / name
        assert file_layout(str(path), path.read_bytes()[:65536]) == layout
    one = tmp_path / "one.json"
    one.write_text(json.dumps(_identity(), indent=2))
    assert file_layout(str(one), one.read_bytes()) == VALUES


# --------------------------------------------------------------------------- end to end


def _run(tmp_path: Path, identities: Path, *args: str) -> tuple[int, dict | None]:
    output = tmp_path / "out" / "importBody.json"
    code = main(
        ["migrate", "kratos", f"--org={ORG}", f"--identities={identities}", f"--output={output}", *args]
    )
    manifest = tmp_path / "out" / "importBody.manifest.json"
    return code, (json.loads(manifest.read_text()) if manifest.exists() else None)


def _users(tmp_path: Path, manifest: dict) -> tuple[dict[str, dict], list[dict]]:
    body = json.loads((tmp_path / "out" / manifest["bodies"][0]["path"]).read_text())
    org = body["dataOrgs"]["orgs"][0]
    return {u["userId"]: u["user"] for u in org["humanUsers"]}, org.get("userMetadata", [])


def _dead(tmp_path: Path) -> dict[str, str]:
    path = tmp_path / "out" / "importBody.dead-letter.ndjson"
    letters = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
    return {d["record"]["id"]: d["reason"] for d in letters}


def test_the_sample_converts_field_by_field_and_every_hash_verifies(tmp_path, capsys):
    code, manifest = _run(
        tmp_path, SAMPLE, f"--zitadel-config={ENABLED}", "--metadata", "--idp-map=google=2764"
    )
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"] is True
    assert manifest["invariant"]["text"].startswith("identities read 9 = written 7 + dead-lettered 2")
    assert _dead(tmp_path) == {BEN: Reason.BLOCKED, GUS: Reason.UNSUPPORTED_PBKDF2_DIGEST}
    users, metadata = _users(tmp_path, manifest)
    ana = users[ANA]
    assert ana["userName"] == "ana@example.com" and ana["profile"] == {"firstName": "Ana", "lastName": "Lima"}
    assert ana["email"] == {"email": "ana@example.com", "isEmailVerified": True}
    assert ana["otpCode"] == "X3FFZFCPNHC25ZPFGS52CF726ANIHT2O"
    assert users[CEM]["email"] == {"email": "cem@example.com"}  # status "sent": not verified
    assert users[CEM]["profile"]["lastName"] == "Yılmaz"
    assert users[EVA]["phone"] == {"phone": "+4915112345003"}  # its sms address is pending
    assert users[EVA]["email"]["isEmailVerified"] is True
    assert users[DAN]["idps"] == [
        {"configId": "2764", "externalUserId": "114873920163458201937", "displayName": "dan@example.com"}
    ]
    assert "hashedPassword" not in users[DAN] and "hashedPassword" not in users[IVY]
    assert users["5db06bab-afbd-4fd1-8c8e-6a5e9b7dcf46"]["userName"] == "fay"
    passwords = _passwords()
    verified = {}
    for name, user_id in (("ana", ANA), ("cem", CEM), ("eva", EVA), ("fay", FAY), ("hal", HAL)):
        encoded = users[user_id]["hashedPassword"]["value"]
        verified[name] = passwap_rules.verify(encoded, passwords[name])
        assert passwap_rules.verify(encoded, passwords[name] + "x") is False
    assert verified == dict.fromkeys(("ana", "cem", "eva", "fay", "hal"), True)
    shown = {(m["id"], m["key"]): base64.b64decode(m["value"]).decode() for m in metadata}
    assert shown[(ANA, "external_id")] == "legacy-1001" and shown[(ANA, "public.plan")] == "pro"
    assert shown[(ANA, "admin.crm_id")] == "C-1001" and (ANA, "traits.email") not in shown
    counts = manifest["counts"]
    assert counts["kratos.no_password.migration-hook"] == 1 and counts["kratos.no_password.none"] == 1
    assert counts["kratos.idp_links.unmapped.github"] == 1 and counts["users_with_otp"] == 1
    assert counts["not_carried.kratos.schema_id"] == 7 and counts["cannot_sign_in.kratos"] == 1
    passwordless = (tmp_path / "out" / "importBody.passwordless.ndjson").read_text().splitlines()
    assert [json.loads(line)["reason"] for line in passwordless] == ["password-migration-hook"]
    out, err = capsys.readouterr()
    assert "password still at the old system" in out and leaked_secrets(out + err) == []
    dead = (tmp_path / "out" / "importBody.dead-letter.ndjson").read_text()
    assert "initial_" not in dead and "$pbkdf2-sha384" in dead  # the record, for a re-run


def test_the_cli_listing_and_ndjson_read_the_same_identities(tmp_path):
    code, manifest = _run(tmp_path, SAMPLES / "kratos-cli-list-identities.json", "--include-blocked")
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"] is True
    users, _ = _users(tmp_path, manifest)
    assert len(users) == 9 and not any("hashedPassword" in u for u in users.values())
    assert manifest["counts"]["kratos.no_password.no-credentials"] == 9
    assert manifest["counts"]["kratos.inactive_written"] == 1
    assert users[ANA]["email"] == {"email": "ana@example.com", "isEmailVerified": True}
    packed = tmp_path / "identities.ndjson.gz"
    packed.write_bytes(gzip.compress((SAMPLES / "kratos-identities.ndjson").read_bytes()))
    code, manifest = _run(tmp_path / "nd", packed, f"--zitadel-config={ENABLED}")
    assert code == 0 and manifest is not None
    assert manifest["invariant"]["text"].startswith("identities read 9 = written 7 + dead-lettered 2")


def test_a_broken_ndjson_line_is_one_dead_letter_and_the_rest_is_read(tmp_path):
    lines = (SAMPLES / "kratos-identities.ndjson").read_text().splitlines()
    broken = tmp_path / "ids.ndjson"
    broken.write_text("\n".join([lines[0], lines[1][:40], *lines[2:]]) + "\n")
    code, manifest = _run(tmp_path, broken, f"--zitadel-config={ENABLED}")
    assert manifest is not None and manifest["invariant"]["holds"] is True
    assert manifest["counts"]["dead_letter.kratos-identity.malformed-json"] == 1
    assert manifest["counts"]["users_written"] == 7


def test_files_of_another_kind_are_refused_in_one_line(tmp_path, capsys):
    other = tmp_path / "users.json"
    other.write_text('[{"user_id": "auth0|1", "email": "a@example.com"}]')
    assert _run(tmp_path, other)[0] == 2
    assert "not Ory Kratos identities" in capsys.readouterr().err
    table = tmp_path / "table.txt"  # kratos list identities without --format json
    table.write_text("ID\tEXTERNAL ID\tVERIFIED ADDRESSES\n0e6b1c5c\t\tana@example.com\n")
    assert _run(tmp_path, table)[0] == 2
    assert "its default --format is a table: add --format json" in capsys.readouterr().err
    empty = tmp_path / "empty.json"
    empty.write_text("")
    code, manifest = _run(tmp_path / "empty", empty)
    assert manifest is not None and manifest["invariant"]["text"].startswith("identities read 0 = written 0")
    out = tmp_path / "out" / "importBody.json"
    assert main(["migrate", "auth0", "--org=1", f"--users={SAMPLE}", f"--output={out}"]) == 2
    assert "migrate kratos --identities reads it" in capsys.readouterr().err


def test_push_and_state_nights_deactivate_an_identity_made_inactive(tmp_path, capsys):
    token = tmp_path / "token"
    token.write_text(PAT)
    state = tmp_path / "state"
    verifiers = ("argon2", "bcrypt", "md5salted", "pbkdf2", "scrypt", "sha2")
    with ZitadelServer(tokens={PAT}, hash_verifiers=verifiers) as server:

        def night(identities: Path) -> int:
            return _run(
                tmp_path,
                identities,
                f"--zitadel-config={ENABLED}",
                f"--state={state}",
                f"--push-url={server.url}",
                f"--token-file={token}",
            )[0]

        assert night(SAMPLE) == 0
        assert ANA in server.user_ids(ORG) and BEN not in server.user_ids(ORG)
        identities = json.loads(SAMPLE.read_text())
        for identity in identities:
            if identity["id"] == ANA:
                identity["state"] = "inactive"
        day2 = tmp_path / "day2" / "identities.json"
        day2.parent.mkdir()
        day2.write_text(json.dumps(identities))
        assert night(day2) == 0
        assert server.state.user_states[ANA] == "inactive"
        assert server.state.user_states[CEM] in ("active", "initial") and BEN not in server.user_ids(ORG)
    out, err = capsys.readouterr()
    assert leaked_secrets(out + err) == []


def test_include_blocked_imports_the_inactive_identity_with_its_kratos_argon2(tmp_path):
    code, manifest = _run(tmp_path, SAMPLE, f"--zitadel-config={ENABLED}", "--include-blocked")
    assert code == 0 and manifest is not None and manifest["invariant"]["holds"] is True
    users, _ = _users(tmp_path, manifest)
    ben = users[BEN]["hashedPassword"]["value"]
    assert ben.startswith("$argon2id$v=19$m=131072,t=1,p=16$")  # Kratos's argon2 defaults on 8 CPUs
    assert passwap_rules.verify(ben, _passwords()["ben"]) is True
    assert manifest["counts"]["kratos.inactive_written"] == 1 and _dead(tmp_path) == {
        GUS: Reason.UNSUPPORTED_PBKDF2_DIGEST
    }
