"""Reading files in a pipeline: the planned list (``beam.Create``) and ``open_input``, as the shared
reader does (transforms/sources/file_reader.py), against Beam's ``fileio.MatchFiles`` and
``ReadMatches`` (``ReadableFile.open``), on the same files.

    python benchmarks/file_open_bench.py benchmarks/data/table-1000000/users.csv --repeat 3
    python benchmarks/file_open_bench.py 'benchmarks/data/auth0-1000000/*.json' --repeat 3

Each run is a pipeline on the in-process runner that reads every byte of the files and counts
the lines (the work every reader does before parsing); the two ways run interleaved, ``--repeat``
times, and the medians of their wall times are printed with their ratio. Both read through Beam's
``FileSystems`` (local or gs://); ``open_input`` also tells gzip by its bytes, skips a BOM and
decodes UTF-16/32 (docs/inputs.md). This is a benchmark, not a test.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import apache_beam as beam
from apache_beam.io import fileio
from apache_beam.options.pipeline_options import PipelineOptions

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from transforms.sources.input_stream import open_input  # noqa: E402
from transforms.sources.json_units import match_inputs  # noqa: E402

_BLOCK = 1 << 20


def _lines(handle) -> int:
    count = 0
    while block := handle.read(_BLOCK):
        count += block.count(b"\n")
    return count


def _with_open_input(path: str) -> int:
    with open_input(path) as stream:
        return _lines(stream)


def _with_readable_file(readable: fileio.ReadableFile) -> int:
    with readable.open() as handle:
        return _lines(handle)


def _run(pattern: str, planned: list[str], how: str) -> float:
    started = time.perf_counter()
    with beam.Pipeline(options=PipelineOptions(["--runner=DirectRunner"])) as p:
        if how == "create+open_input":
            files = p | "Planned" >> beam.Create(planned) | "Spread" >> beam.Reshuffle()
            counts = files | "Read" >> beam.Map(_with_open_input)
        else:
            matched = p | "Match" >> fileio.MatchFiles(pattern) | "Open" >> fileio.ReadMatches()
            counts = matched | "Spread" >> beam.Reshuffle() | "Read" >> beam.Map(_with_readable_file)
        _ = counts | "Sum" >> beam.CombineGlobally(sum)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("pattern", help="a path or glob (local or gs://)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    planned = [f.path for f in match_inputs([args.pattern], 0, "pattern")]
    size = sum(os.path.getsize(p) for p in planned if os.path.exists(p)) / 2**20
    walls: dict[str, list[float]] = {"create+open_input": [], "matchfiles+readmatches": []}
    for _ in range(args.repeat):
        for how, runs in walls.items():
            runs.append(_run(args.pattern, planned, how))
            print(f"  {how:<24} {runs[-1]:7.2f} s", file=sys.stderr)
    print(f"{len(planned)} file(s), {size:,.0f} MiB, medians of {args.repeat} interleaved runs:")
    base = statistics.median(walls["create+open_input"])
    for how, runs in walls.items():
        median = statistics.median(runs)
        shown = ", ".join(f"{w:.2f}" for w in runs)
        print(f"{how:<24} {median:7.2f} s  ({shown})  {median / base:.2f}x")


if __name__ == "__main__":
    main()
