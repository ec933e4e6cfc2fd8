#!/usr/bin/env python3
"""Reads a GeoParquet dataset folder back as a user's tools would, and prints what the
test checks as JSON: pyarrow (the wheel scripts/fetch-arrow unpacks, on PYTHONPATH)
reads the parts and their metadata, OGR (Debian's python3-gdal) parses every geometry's
WKB, hashlib checks the manifest's checksums.

  read_geoparquet.py FOLDER [--rows]

With --rows, every row too: its fields and its covering box.
"""
import hashlib
import json
import math
import sys
from pathlib import Path

import pyarrow.parquet as pq
from osgeo import ogr


def part_facts(path: Path) -> dict:
    metadata = pq.read_metadata(path)
    table = pq.read_table(path)
    geo = json.loads(metadata.metadata[b"geo"])
    wkb_matches_bbox = True
    centres = []
    for wkb, box in zip(table.column("geometry").to_pylist(), table.column("bbox").to_pylist()):
        shape = ogr.CreateGeometryFromWkb(wkb)
        if shape is None or shape.GetGeometryName() != "POLYGON":
            wkb_matches_bbox = False
            continue
        xmin, xmax, ymin, ymax = shape.GetEnvelope()
        if (xmin, ymin, xmax, ymax) != (box["xmin"], box["ymin"], box["xmax"], box["ymax"]):
            wkb_matches_bbox = False
        centres.append(((xmin + xmax) / 2, (ymin + ymax) / 2))
    steps = [math.dist(a, b) for a, b in zip(centres, centres[1:])]
    return {
        "rows": metadata.num_rows,
        "row_groups": metadata.num_row_groups,
        "compression": metadata.row_group(0).column(0).compression if metadata.num_row_groups else None,
        "columns": table.schema.names,
        "geo": geo,
        "wkb_matches_bbox": wkb_matches_bbox,
        "mean_step": sum(steps) / len(steps) if steps else 0.0,
        "sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "first_values": table.slice(0, 1).drop_columns(["geometry", "bbox"]).to_pylist(),
    }


def main() -> None:
    folder = Path(sys.argv[1])
    parts = {path.name: part_facts(path) for path in sorted(folder.glob("*.parquet"))}
    manifest = json.loads((folder / "_manifest.json").read_text())
    whole = pq.read_table(folder)  # the folder as one dataset, as pyarrow and DuckDB read it
    facts = {"parts": parts, "manifest": manifest, "dataset_rows": whole.num_rows}
    if "--rows" in sys.argv[2:]:
        facts["rows"] = whole.drop_columns(["geometry"]).to_pylist()
    print(json.dumps(facts))


if __name__ == "__main__":
    main()
