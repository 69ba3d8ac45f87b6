"""Generate ``meshes/vx300s/light/``: decimated copies of the ViperX 300 meshes that the cameras draw.

The cameras render on the CPU (llvmpipe / OSMesa), where the shipped meshes' ~30k triangles cost more than the rest
of the ALOHA scene together; the physics keeps colliding with the shipped meshes (their convex hulls) unchanged. Each
STL's triangle soup is welded on exactly equal vertices, its sub-millimetre detail (screw threads, which quadric
decimation cannot collapse without flipping faces) merged by clustering vertices on a ``CLUSTER`` grid, then reduced
by quadric edge collapse (fast-simplification, a dev-only dependency pinned in requirements-test.txt) to ``KEEP`` of
the shipped triangles, never below ``MIN_FACES``; the result is written as binary STL with the same name. Run
``python tools/make_light_meshes.py`` after changing a constant and commit the files (``--check`` exits 1 when they
differ; a test runs it).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / 'meshes' / 'vx300s'
OUT = SOURCE / 'light'
KEEP = 0.09
"""Fraction of each mesh's triangles kept, chosen with bench/bench_sim.py's side-by-side renders against the pixel
difference to the shipped meshes (test/test_sim_light_meshes.py), both measured in one session: 0.12 rendered at
0.81-0.85 of the primitive cell (mean absolute difference at most 0.84), 0.09 at 0.90 (at most 1.49), 0.07 at 1.01
(at most 3.15, forearm edges visibly off)."""
MIN_FACES = 160
CLUSTER = 1.0
"""Grid of the vertex clustering, in the STL's units (millimetres)."""
AGGRESSIVENESS = 7.0

STL_HEADER = 80
STL_RECORD = np.dtype([('normal', '<f4', 3), ('vertices', '<f4', (3, 3)), ('attribute', '<u2')])


def read_stl(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """Vertices (V, 3) float64 and faces (F, 3) of a binary STL, welded on exactly equal vertices."""
    raw = path.read_bytes()
    count = int(np.frombuffer(raw, dtype='<u4', count=1, offset=STL_HEADER)[0])
    records = np.frombuffer(raw, dtype=STL_RECORD, count=count, offset=STL_HEADER + 4)
    corners = records['vertices'].reshape(-1, 3)
    vertices, inverse = np.unique(corners, axis=0, return_inverse=True)
    faces = inverse.reshape(-1, 3)
    keep = (faces[:, 0] != faces[:, 1]) & (faces[:, 1] != faces[:, 2]) & (faces[:, 0] != faces[:, 2])
    return vertices.astype(np.float64), faces[keep]


def stl_bytes(vertices: np.ndarray, faces: np.ndarray, *, name: str) -> bytes:
    """A binary STL of ``faces`` over ``vertices`` with unit face normals (zero for degenerate faces)."""
    corners = vertices[faces].astype(np.float32)
    normal = np.cross(corners[:, 1] - corners[:, 0], corners[:, 2] - corners[:, 0])
    length = np.linalg.norm(normal, axis=1, keepdims=True)
    normal = np.divide(normal, length, out=np.zeros_like(normal), where=length > 0.0)
    records = np.zeros(len(faces), dtype=STL_RECORD)
    records['normal'] = normal
    records['vertices'] = corners
    header = f'decimated {name} (tools/make_light_meshes.py)'.encode().ljust(STL_HEADER, b' ')[:STL_HEADER]
    return header + np.uint32(len(faces)).tobytes() + records.tobytes()


def cluster(vertices: np.ndarray, faces: np.ndarray, *, cell: float) -> tuple[np.ndarray, np.ndarray]:
    """Merge the vertices of each ``cell``-sized grid cube into their mean; faces that collapse or repeat go."""
    _, inverse = np.unique(np.floor(vertices / cell).astype(np.int64), axis=0, return_inverse=True)
    inverse = inverse.ravel()
    count = int(inverse.max()) + 1
    weight = np.bincount(inverse, minlength=count).astype(np.float64)
    merged = np.stack([np.bincount(inverse, weights=vertices[:, i], minlength=count) for i in range(3)], axis=1)
    merged /= weight[:, None]
    new_faces = inverse[faces]
    keep = (new_faces[:, 0] != new_faces[:, 1]) & (new_faces[:, 1] != new_faces[:, 2])
    new_faces = new_faces[keep & (new_faces[:, 0] != new_faces[:, 2])]
    _, first = np.unique(np.sort(new_faces, axis=1), axis=0, return_index=True)
    new_faces = new_faces[np.sort(first)]
    used = np.unique(new_faces)
    remap = np.full(count, -1, dtype=np.int64)
    remap[used] = np.arange(len(used))
    return merged[used], remap[new_faces]


def decimate(vertices: np.ndarray, faces: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cluster on ``CLUSTER``, then quadric edge collapse to ``KEEP`` of the faces (at least ``MIN_FACES``)."""
    import fast_simplification

    target = max(MIN_FACES, round(KEEP * len(faces)))
    if target >= len(faces):
        return vertices, faces
    vertices, faces = cluster(vertices, faces, cell=CLUSTER)
    if target >= len(faces):
        return vertices, faces
    light_vertices, light_faces = fast_simplification.simplify(vertices, faces, target_count=target, agg=AGGRESSIVENESS)
    return np.asarray(light_vertices, dtype=np.float64), np.asarray(light_faces, dtype=np.int64)


def generate() -> dict[str, bytes]:
    """File name -> light STL bytes for every shipped mesh."""
    files = {}
    for path in sorted(SOURCE.glob('*.stl')):
        vertices, faces = decimate(*read_stl(path))
        files[path.name] = stl_bytes(vertices, faces, name=path.name)
    return files


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--check', action='store_true', help='exit 1 if the files on disk differ from the generated')
    args = parser.parse_args()
    files = generate()
    if args.check:
        stale = [
            name for name, data in files.items() if not (OUT / name).is_file() or (OUT / name).read_bytes() != data
        ]
        extra = sorted({path.name for path in OUT.glob('*.stl')} - set(files))
        for name in [*stale, *extra]:
            print(f'out of date: {OUT / name}')
        return 1 if stale or extra else 0
    OUT.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (OUT / name).write_bytes(data)
        print(f'{name}: {(len(data) - STL_HEADER - 4) // STL_RECORD.itemsize} triangles')
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
