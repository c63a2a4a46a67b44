"""The counter and record names a reader of one-user records writes, from its source's name.

Every source that reads files of users writes the same kinds of names, and the shared run reads
them by convention (docs/adding-a-source.md, "The counters the shared run reads"):

========================  ==============================  =========================================
name                      example (``okta``)              read by
========================  ==============================  =========================================
``source``                ``okta-user``                   rows' and dead letters' ``source``; the sync
``file_source``           ``okta-file``                   the dead letter of a file's unreadable rest
``users_read``            ``okta.users_read``             the invariant ("users read = ...")
``users_mapped``          ``okta.users_mapped``           the invariant ("mapped = written + ...")
``unreadable_files``      ``okta.unreadable_files``       the summary
``metadata_dropped``      ``okta.metadata_dropped``       the summary's "metadata entries dropped"
``cannot_sign_in``        ``cannot_sign_in.okta``         the manifest's users who cannot sign in yet
========================  ==============================  =========================================

A source declares them once (``COUNTERS = SourceCounters(source_name(__name__))``) and writes its
own with :meth:`SourceCounters.own` (``okta.status.``); ``FieldTally(counters.name, ...)`` writes
``not_carried.<name>.<field>`` and ``unknown_field.<name>.<field>``, which the summary lists.

Example::

    names = SourceCounters("okta")
    names.users_read                     # "okta.users_read"
    holds, text = names.invariant(counts, refused_label="blocked")
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from transforms.common import counters
from transforms.common.accounting import reader_invariant

__all__ = ["SourceCounters"]


@dataclasses.dataclass(frozen=True)
class SourceCounters:
    """The names of the source ``name`` (module docstring)."""

    name: str

    @property
    def source(self) -> str:
        return f"{self.name}-user"

    @property
    def file_source(self) -> str:
        return f"{self.name}-file"

    @property
    def users_read(self) -> str:
        return self.own("users_read")

    @property
    def users_mapped(self) -> str:
        return self.own("users_mapped")

    @property
    def unreadable_files(self) -> str:
        return self.own("unreadable_files")

    @property
    def metadata_dropped(self) -> str:
        return self.own("metadata_dropped")

    @property
    def cannot_sign_in(self) -> str:
        return counters.CANNOT_SIGN_IN + self.name

    def own(self, suffix: str) -> str:
        """A counter of the source's own: ``<name>.<suffix>``."""
        return f"{self.name}.{suffix}"

    def invariant(
        self,
        counts: Mapping[str, int],
        *,
        refused_label: str = "blocked",
        noun: str = "users",
        passed_label: str = "mapped",
    ) -> tuple[bool, str]:
        """users read = written + dead-lettered; users mapped = written + dropped as duplicates
        (``transforms.common.accounting.reader_invariant`` on these names)."""
        return reader_invariant(
            counts,
            read=counts.get(self.users_read, 0),
            noun=noun,
            source=self.source,
            passed=counts.get(self.users_mapped, 0),
            passed_label=passed_label,
            refused_label=refused_label,
        )
