"""The public PTransforms declare their element types, so miswiring fails when the pipeline is built.

Beam checks declared hints at construction (``pipeline_type_check``, on by default); runtime type
checking stays off (it would cost per element). These tests build pipelines without running them.
"""

from __future__ import annotations

import apache_beam as beam
import pytest
from apache_beam.typehints.decorators import TypeCheckError

from transforms.common.records import DeadLetter, PartitionRows
from transforms.files.sinks import WriteDeadLetterShards
from transforms.output.batching import BodySpec
from transforms.output.bodies import UsersToBodies
from transforms.sources.auth0.options import Auth0Options
from transforms.sources.auth0.read import ReadAuth0Users
from transforms.sources.keycloak.mapping import KeycloakOptions
from transforms.sources.keycloak.read import ReadKeycloakUsers
from transforms.sources.registry import kind
from transforms.sources.zitadel.render import RenderBodies


def _spec() -> BodySpec:
    return BodySpec(org_id="1", timeout="5m0s", batch_size=10, multiline=False)


def test_users_to_bodies_refuses_rows_of_the_wrong_shape():
    p = beam.Pipeline()
    wrong = p | beam.Create([("not-a-partition", 1)])
    with pytest.raises(TypeCheckError, match="UsersToBodies|ClaimsFn|Claims"):
        _ = wrong | UsersToBodies(_spec(), "/tmp")


def test_dead_letter_sink_refuses_something_else():
    p = beam.Pipeline()
    wrong = p | beam.Create([1, 2, 3])
    with pytest.raises(TypeCheckError):
        _ = wrong | WriteDeadLetterShards("/tmp")


def test_render_bodies_refuses_something_else():
    p = beam.Pipeline()
    wrong = p | beam.Create(["a body?"])
    with pytest.raises(TypeCheckError):
        _ = wrong | RenderBodies("/tmp", "5m0s")


def test_readers_declare_what_they_emit(tmp_path):
    p = beam.Pipeline()
    auth0 = p | "Auth0" >> ReadAuth0Users([], [], Auth0Options(), 2, str(tmp_path))
    keycloak = p | "Keycloak" >> ReadKeycloakUsers([], KeycloakOptions(), 2, str(tmp_path))
    for out in (auth0, keycloak):
        assert out.rows.element_type == beam.typehints.native_type_compatibility.convert_to_beam_type(
            PartitionRows
        )
        assert out.dead.element_type == beam.typehints.native_type_compatibility.convert_to_beam_type(
            DeadLetter
        )
    # And what they emit is what the next steps take: wiring them builds.
    bodies = auth0.rows | UsersToBodies(_spec(), str(tmp_path))
    _ = bodies.dead | WriteDeadLetterShards(str(tmp_path))
    assert bodies.bodies.element_type is str


def test_compare_with_state_takes_rows_and_gives_rows_changes_and_dead_letters(tmp_path):
    from transforms.sync.compare import CompareWithState, SourceUsers, SyncOptions

    options = SyncOptions(org_id="1", source="auth0", records=kind("auth0").records, partitions=4)
    p = beam.Pipeline()
    source = p | "Auth0" >> ReadAuth0Users([], [], Auth0Options(), 2, str(tmp_path))
    out = SourceUsers(source.rows, source.dead) | CompareWithState(options, {}, str(tmp_path))
    rows_type = beam.typehints.native_type_compatibility.convert_to_beam_type(PartitionRows)
    dead_type = beam.typehints.native_type_compatibility.convert_to_beam_type(DeadLetter)
    assert out.rows.element_type == rows_type
    assert out.dead.element_type == dead_type and out.changes.element_type is str
    _ = out.rows | UsersToBodies(_spec(), str(tmp_path))  # new users go on to the bodies
    wrong = p | "Wrong" >> beam.Create(["not rows"])
    with pytest.raises(TypeCheckError):
        _ = SourceUsers(wrong, source.dead) | "WrongSync" >> CompareWithState(options, {}, str(tmp_path))
