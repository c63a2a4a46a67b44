"""Packaging for zitadel-beam.

Installs the two packages (``pipeline`` and ``transforms``) and the ``zitadel-beam`` console
script. The same file is what Dataflow workers install with ``--setup_file ./setup.py``.
"""

import setuptools

REQUIRED = [
    "apache-beam>=2.77,<3",
    "google-cloud-storage>=2.18.2,<4",
    # Without google-auth-httplib2, Beam's GCS client connects anonymously and private
    # buckets fail in production (docs/gcs.md#credentials).
    "google-auth-httplib2>=0.2",
    "orjson>=3.9.7,<4",
    "bcrypt>=4.1",
    # Streaming JSON parser (C backend): reads JSON arrays and multi-GB realm exports
    # element by element instead of loading the whole document.
    "ijson>=3.3",
    # JWT-profile service-account authentication (push/verify/export with --key-file).
    "pyjwt[crypto]>=2.8",
    # --zitadel-config reads the operator's ZITADEL runtime config, which is YAML.
    "PyYAML>=6",
]

# The DataflowRunner submits jobs with the Dataflow service client in Beam's gcp extra
# (docs/runners.md#dataflow); local runs do not need it.
DATAFLOW = ["apache-beam[gcp]>=2.77,<3"]

# `zitadel-beam companion serve` (docs/companion.md#framework): the trickle-migration service that
# ZITADEL calls as an Actions v2 target. Starlette (ASGI) and uvicorn: small, maintained, typed.
COMPANION = ["starlette>=0.47,<2", "uvicorn>=0.35,<1"]

TESTS = (
    DATAFLOW
    + COMPANION
    + [
        # Below 9.2: pytest 9.2's structured node ids make pytest-xdist 3.8's `--dist loadgroup`
        # group nothing (pytest-xdist issue 1386, open), so every worker rebuilt each module
        # fixture (the portable job service, the 200,000-user export). tests/conftest.py refuses a
        # run where the groups are lost.
        "pytest>=8,<9.2",
        # Runs the suite in worker processes (`./run_local.sh test`): most of a test's time is spent
        # waiting on sockets, subprocesses and Beam's start-up, so workers overlap the waits.
        "pytest-xdist>=3.6",
        # The packaging test builds a wheel without build isolation (no download per run).
        "setuptools>=61",
        "wheel>=0.40",
        "gcp-storage-emulator>=2024.8.3",
        "argon2-cffi>=23.1",
        # The schema test reads ZITADEL's published descriptors (tests/data/zitadel-admin-v1.binpb)
        # with protobuf's own JSON parser; apache-beam already pulls it in, named here because the
        # tests use it directly.
        "protobuf>=4.25",
        # Static checks that `./run_local.sh test` runs before pytest (pyproject.toml configures both).
        # Pinned to a minor release: a newer ruff may format differently and turn CI red on its own.
        # Property-based tests (tests/scenarios/test_hostile_inputs.py): mutated real-world exports.
        "hypothesis>=6.100",
        "ruff>=0.17.6,<0.18",
        "mypy>=2.4,<2.5",
        "types-PyYAML>=6",
    ]
)

setuptools.setup(
    name="zitadel-beam",
    version="0.1.0",
    description="Bulk user migration into ZITADEL with Apache Beam",
    python_requires=">=3.10",
    packages=setuptools.find_packages(
        include=["pipeline", "pipeline.*", "transforms", "transforms.*", "companion", "companion.*"]
    ),
    install_requires=REQUIRED,
    extras_require={"dataflow": DATAFLOW, "companion": COMPANION, "test": TESTS},
    entry_points={"console_scripts": ["zitadel-beam=pipeline.cli:main"]},
)
