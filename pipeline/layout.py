"""Where a migrate run writes: the output layout and every path a run may write.

Shared by the launcher (``pipeline/migrate.py``, ``pipeline/run_outputs.py``) and the preflight's read-only-inputs check
(``pipeline/preflight.py``), so neither imports the other for it.
"""

from __future__ import annotations

import dataclasses
import posixpath

__all__ = ["OutputLayout", "output_layout", "passwordless_path", "planned_outputs"]


@dataclasses.dataclass(frozen=True)
class OutputLayout:
    """Where a run writes: bodies, manifest, dead letters and the temporary folder."""

    output: str
    stem: str
    ext: str
    manifest: str
    dead_letter: str
    tmp_dir: str

    def numbered(self, index: int, total: int) -> str:
        return f"{self.stem}-{index:05d}-of-{total:05d}{self.ext}"


def _split_ext(path: str) -> tuple[str, str]:
    head, tail = posixpath.split(path)
    stem, ext = posixpath.splitext(tail)
    if not stem:
        stem, ext = tail, ""
    return (posixpath.join(head, stem) if head else stem), ext


def output_layout(output: str, dead_letter: str | None) -> OutputLayout:
    stem, ext = _split_ext(output)
    head, name = posixpath.split(stem)
    tmp = posixpath.join(head, f".{name}.zitadel-beam-tmp") if head else f".{name}.zitadel-beam-tmp"
    return OutputLayout(
        output, stem, ext, f"{stem}.manifest.json", dead_letter or f"{stem}.dead-letter.ndjson", tmp
    )


def planned_outputs(output: str, dead_letter: str | None) -> dict[str, str]:
    """Label → path of everything a migrate run on ``output`` may write (for the input check)."""
    from transforms.files.locks import lock_path_for
    from transforms.files.storage import WORKDIR_MARK

    layout = output_layout(output, dead_letter)
    folder, name = posixpath.split(output)
    work = f".{name}{WORKDIR_MARK}0a1b2c3d/spill.pkl"
    return {
        "--output": layout.output,
        "--output (its numbered bodies)": layout.numbered(1, 2),
        "--dead-letter": layout.dead_letter,
        "--output (its manifest)": layout.manifest,
        "--output (its passwordless list)": passwordless_path(layout),
        "--output (its lock)": lock_path_for(output),
        "--output (its work folder)": posixpath.join(folder, work) if folder else work,
        "--output (its push ledger)": f"{layout.stem}.results/body-00000.json",
        "--output (its change files)": f"{layout.stem}.changes-00001-of-00002.ndjson",
    }


def passwordless_path(layout: OutputLayout) -> str:
    return f"{layout.stem}.passwordless.ndjson"
