"""Wavefront OBJ reading, the way RecastDemo reads it.

Only ``v`` and ``f`` records are used; ``f`` entries may be ``v``, ``v/vt``, ``v//vn`` or
``v/vt/vn`` and negative (relative) indices; polygons are fan-triangulated as
(f0, f[i-1], f[i]). Returns vertices float32 (n, 3) and triangles int32 (m, 3).

Frames: OBJ files are Y-up. ``recast_frame=True`` maps (x, y, z) -> (x, z, y) and reverses
each triangle's winding (a mirror: VoxNav cell (ix, iy) is then exactly Recast cell (x, z)).
``recast_frame=False`` uses Blender's importer rotation (x, y, z) -> (x, -z, y), which is what a
user expects but is not cell-aligned with Recast.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .errors import VoxNavError


def read_obj(path, recast_frame: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Read an OBJ file into Z-up float32 vertices (n, 3) and int32 triangles (m, 3)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise VoxNavError(f"cannot read OBJ file {path}: {exc.strerror or exc}") from exc
    coords: list[str] = []
    tris: list[tuple[int, int, int]] = []
    n_verts = 0
    for line_no, line in enumerate(text.splitlines(), 1):
        if line.startswith("v") and line[1:2] in (" ", "\t"):
            parts = line[1:].split()
            if len(parts) < 3:
                raise VoxNavError(f"{path}:{line_no}: a vertex needs x y z, got {line.strip()!r}")
            coords.extend(parts[:3])
            n_verts += 1
        elif line.startswith("f") and line[1:2] in (" ", "\t"):
            face = []
            for token in line[1:].split():
                head = token.split("/", 1)[0]
                try:
                    index = int(head)
                except ValueError:
                    raise VoxNavError(
                        f"{path}:{line_no}: face index {token!r} is not a number"
                    ) from None
                face.append(index + n_verts if index < 0 else index - 1)
            for i in range(2, len(face)):
                tri = (face[0], face[i - 1], face[i])
                if min(tri) < 0 or max(tri) >= n_verts:
                    raise VoxNavError(
                        f"{path}:{line_no}: face refers to vertex {max(tri) + 1} but only "
                        f"{n_verts} vertices are defined before it"
                    )
                tris.append(tri)
    try:
        verts = np.array(coords, dtype=np.float32).reshape(-1, 3)
    except ValueError as exc:
        raise VoxNavError(f"{path}: a vertex coordinate is not a number ({exc})") from exc
    faces = np.array(tris, dtype=np.int32).reshape(-1, 3)
    if recast_frame:
        return verts[:, [0, 2, 1]].copy(), faces[:, [0, 2, 1]].copy()
    out = np.empty_like(verts)
    out[:, 0] = verts[:, 0]
    out[:, 1] = -verts[:, 2]
    out[:, 2] = verts[:, 1]
    return out, faces
