"""Body elements of a ``migrate zitadel`` plan → temporary body files, in parallel (Beam).

The plan (``plan.py``) cuts an export into body elements ``(index, org id, org JSON, segment
paths)`` without Beam; this step renders each element's ``dataOrgsv1`` body (``data_org.py``) and
writes it under the run's temporary folder, named by index, users and sha256
(``transforms.output.batching.body_temp_name``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator

import apache_beam as beam
import orjson
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from transforms.common.records import NAMESPACE
from transforms.files.spill import read_spill
from transforms.files.storage import open_private
from transforms.output.batching import body_temp_name
from transforms.sources.zitadel.data_org import render_data_org
from transforms.sources.zitadel.plan import BodyElement

__all__ = ["RenderBodies"]


class _RenderBodyFn(beam.DoFn):
    """(index, org id, org JSON, segment paths) → a temporary body file named by index and sha256."""

    def __init__(self, tmp_dir: str, timeout: str, multiline: bool):
        self._tmp_dir = tmp_dir
        self._timeout = timeout
        self._multiline = multiline

    def process(self, element: BodyElement) -> Iterator[str]:
        index, org_id, org_json, segments = element
        data_org = render_data_org(org_id, org_json, [read_spill(p) for p in segments])
        body = {"dataOrgsv1": {"orgs": [data_org]}, "timeout": self._timeout}
        option = orjson.OPT_INDENT_2 if self._multiline else 0
        data = orjson.dumps(body, option=option) + b"\n"
        digest = hashlib.sha256(data).hexdigest()
        users = len(data_org.get("humanUsers") or [])
        path = FileSystems.join(self._tmp_dir, body_temp_name((0, index), users, digest))
        with open_private(path) as handle:
            handle.write(data)
        Metrics.counter(NAMESPACE, "bodies_written").inc()
        Metrics.counter(NAMESPACE, "human_users_written").inc(users)
        Metrics.counter(NAMESPACE, "machine_users_written").inc(len(data_org.get("machineUsers") or []))
        yield path


@beam.typehints.with_input_types(BodyElement)
@beam.typehints.with_output_types(str)
class RenderBodies(beam.PTransform):
    """Body elements of a plan → temporary body files (paths), in parallel.

    Example::

        p | beam.Create(elements) | 'Render' >> RenderBodies(tmp_dir, '5m0s', multiline=False)
    """

    def __init__(self, tmp_dir: str, timeout: str, multiline: bool = False):
        super().__init__()
        self._tmp_dir, self._timeout, self._multiline = tmp_dir, timeout, multiline

    def expand(self, elements: beam.PCollection[BodyElement]) -> beam.PCollection[str]:
        return (
            elements
            | "Spread" >> beam.Reshuffle()
            | "RenderBody" >> beam.ParDo(_RenderBodyFn(self._tmp_dir, self._timeout, self._multiline))
        )
