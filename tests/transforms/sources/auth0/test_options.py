"""Auth0Options (transforms/sources/auth0/options.py): keyword-only, and what the flags mean."""

from __future__ import annotations

import dataclasses

import pytest

from transforms.sources.auth0.options import Auth0Options


@pytest.mark.parametrize(("policy", "drops"), [("dead-letter", False), ("import-without-password", True)])
def test_drop_bad_hashes_follows_on_unsupported_hash(policy, drops):
    assert Auth0Options(on_unsupported_hash=policy).drop_bad_hashes is drops


def test_options_are_keyword_only_and_frozen():
    with pytest.raises(TypeError):
        Auth0Options(True)  # the point: positional arguments are refused
    options = Auth0Options(email_verified=True)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.email_verified = False  # the point: frozen
