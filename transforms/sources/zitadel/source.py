"""A ZITADEL export as the tool below the command line sees it: its files (it cannot sync).

The command's half is ``command.py`` (``DESCRIPTION``, which the registry finds). ``migrate zitadel --export`` takes an
export document and also a dataOrgsv1 import body, which it cuts into bodies. Example::

    KIND.shapes.identify({"orgs": "start_array"})  # ("zitadel-export", 'a top-level "orgs" array')
"""

from __future__ import annotations

from collections.abc import Mapping

from transforms.sources.declaration import source_name
from transforms.sources.source_parts import FileShapes, Shape, SourceKind

__all__ = ["KIND"]


def _identify(keys: Mapping[str, str]) -> tuple[str, str] | None:
    for key in ("dataOrgsv1", "data_orgsv1"):
        if key in keys:
            return "import-body-v1", f'a top-level "{key}"'
    if keys.get("orgs") == "start_array":
        return "zitadel-export", 'a top-level "orgs" array'
    return None


KIND = SourceKind(
    name=source_name(__name__),  # the package's name
    records={},  # its users are not read one by one: no --state (docs/sync.md)
    shapes=FileShapes(
        shapes={
            "zitadel-export": Shape(what="a ZITADEL export document"),
            "import-body-v1": Shape(
                what="a ZITADEL dataOrgsv1 import body",
                takes="push --body sends it as it is (migrate zitadel --export cuts it)",
            ),
        },
        readers={"zitadel-export": ("zitadel-export", "import-body-v1")},
        identify=_identify,
        rank=10,
    ),
)
