"""Wavefront OBJ reading, the way RecastDemo reads it, streamed in blocks.

Only ``v`` and ``f`` records are used; ``f`` entries may be ``v``, ``v/vt``, ``v//vn`` or
``v/vt/vn`` and negative (relative: -1 is the last vertex defined so far) indices; polygons are
fan-triangulated as (f0, f[i-1], f[i]), except, outside the Recast frame, concave ones, which
are ear-clipped (a fan covers ground outside a concave face: a U-shaped floor got floor
across its gap; RecastDemo fans them all, and so does ``recast_frame=True``, for parity:
nav_test has seven notched 8-gons whose fans fill their notches). Returns vertices float32
(n, 3) and triangles int32 (m, 3). As in RecastDemo and Blender's importer, leading blanks
before a record are skipped, ``\\r`` counts as a blank, ``#`` starts a comment, and a UTF-8
byte-order mark is ignored.

The file is read in blocks of `BLOCK_BYTES` and each block is parsed with array operations, so
memory stays a small multiple of the parsed arrays (not of the text), and a bad line is reported
(path and line number) as soon as its block is read: NaN or infinite coordinates (quoted as
written), face indices that are 0, beyond the vertices defined so far, or negative past the
first vertex (quoted as written). Files that are not OBJ text (binary data, an image, an empty
file) and OBJ files without faces are refused with the path.

Frames: OBJ files are Y-up. ``recast_frame=True`` maps (x, y, z) -> (x, z, y) and reverses
each triangle's winding (a mirror: VoxNav cell (ix, iy) is then exactly Recast cell (x, z)).
``recast_frame=False`` uses Blender's importer rotation (x, y, z) -> (x, -z, y), which is what a
user expects but is not cell-aligned with Recast.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from .errors import VoxNavError

BLOCK_BYTES = 1 << 19
"""Bytes read and parsed at a time. [Units: bytes] [Limit: >= 1]"""
MAX_LINE_BYTES = 1 << 24
"""A line longer than this means the file is not OBJ text. [Units: bytes]"""

#: Characters of a bad line quoted in its message. [Units: characters]
QUOTE_CHARS = 120

_BOM = b"\xef\xbb\xbf"
_BLANK = np.zeros(256, dtype=bool)
_BLANK[[9, 10, 11, 12, 13, 32]] = True  # tab, newline, vertical tab, form feed, CR, space
_SIGNATURES = (
    (b"\x89PNG", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"BLENDER", "a Blender .blend file (export the scene as OBJ, or use the Blender CLI)"),
    (b"PK\x03\x04", "a ZIP archive"),
    (b"glTF", "a binary glTF (.glb) file"),
    (b"Kaydara FBX Binary", "a binary FBX file"),
    (b"\xff\xfe", "UTF-16 text (save it as UTF-8 or ASCII)"),
    (b"\xfe\xff", "UTF-16 text (save it as UTF-8 or ASCII)"),
)


def _not_obj(path: Path, what: str) -> VoxNavError:
    return VoxNavError(f"{path} is not a Wavefront OBJ: {what}")


def _check_text(path: Path, head: bytes) -> None:
    """Refuse binary files by their first bytes (a known signature or any NUL byte)."""
    for magic, what in _SIGNATURES:
        if head.startswith(magic):
            raise _not_obj(path, f"it is {what}")
    if b"\x00" in head:
        raise _not_obj(path, "it contains binary data (NUL bytes), not text")


class _Reader:
    """Parses one block of whole lines at a time; keeps the running vertex and line counts."""

    def __init__(self, path: Path, keep_polygons: bool = True):
        self.path = path
        #: Note the faces of four or more vertices (`_keep_polygons`; not in the Recast frame).
        self.keep_polygons = keep_polygons
        self.lines_before = 0
        self.verts_before = 0
        self.vert_blocks: list[np.ndarray] = []
        self.tri_blocks: list[np.ndarray] = []
        self.face_lines = 0
        self.tris_before = 0
        #: Faces of four or more vertices: (first fan triangle, vertex count, vertex ids).
        self.polygon_blocks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def _keep_polygons(self, index: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> None:
        """Note this block's faces of four or more vertices (arguments as `_fan_triangles`
        takes them): a concave one's fan is mended at the end (`_clip_concave`)."""
        n_tris = np.maximum(counts - 2, 0)
        polygon = counts >= 4
        if not polygon.any():
            return
        first_tri = self.tris_before + (np.cumsum(n_tris) - n_tris)[polygon]
        owner = np.repeat(np.flatnonzero(polygon), counts[polygon])
        step = np.arange(owner.shape[0]) - np.repeat(
            np.cumsum(counts[polygon]) - counts[polygon], counts[polygon]
        )
        ids = index[starts[owner] + step].astype(np.int32)  # as the triangles hold them
        self.polygon_blocks.append((first_tri, counts[polygon].astype(np.int32), ids))

    def _fail(self, buf: bytes, line_starts: np.ndarray, line: int, message: str):
        """Raise ``PATH:LINE: message`` for block line ``line``, quoting the line as written."""
        start = int(line_starts[line])
        end = buf.find(b"\n", start)
        text = buf[start:end].decode("utf-8", errors="replace").strip()
        if text.endswith("\\"):
            message += (
                " (a trailing backslash, OBJ's line continuation, is not read: join the line "
                "with the next)"
            )
        if len(text) > QUOTE_CHARS:  # a 200,000-vertex face made a 1.3 MB message
            text = f"{text[:QUOTE_CHARS]}... ({len(text):,} characters)"
        number = self.lines_before + line + 1
        raise VoxNavError(f"{self.path}:{number}: {text!r}: {message}")

    def parse(self, buf: bytes) -> None:
        """Parse ``buf``: whole lines, each ending with ``\\n``."""
        a = np.frombuffer(buf, dtype=np.uint8)
        newline_at = np.flatnonzero(a == 10)
        n_lines = newline_at.shape[0]
        line_starts = np.concatenate([[0], newline_at[:-1] + 1])
        blank = _BLANK[a]
        prev_blank = np.empty_like(blank)
        prev_blank[0] = True
        prev_blank[1:] = blank[:-1]
        tok_start = np.flatnonzero(~blank & prev_blank)
        next_blank = np.empty_like(blank)
        next_blank[-1] = True
        next_blank[:-1] = blank[1:]
        tok_end = np.flatnonzero(~blank & next_blank) + 1
        tok_line = np.searchsorted(newline_at, tok_start)
        # '#' starts a comment: drop every token from the first '#'-token to the line's end.
        first_of_line = np.ones(tok_start.shape[0], dtype=bool)
        first_of_line[1:] = tok_line[1:] != tok_line[:-1]
        hashes = a[tok_start] == 35
        if hashes.any():
            seen = np.cumsum(hashes)
            line_first = np.maximum.accumulate(
                np.where(first_of_line, np.arange(tok_start.shape[0]), 0)
            )
            keep = seen - seen[line_first] + hashes[line_first] == 0
            tok_start, tok_end, tok_line = tok_start[keep], tok_end[keep], tok_line[keep]
            first_of_line = first_of_line[keep]
        tok_len = tok_end - tok_start
        head = a[tok_start]
        is_vkey = first_of_line & (tok_len == 1) & (head == 118)  # "v"
        is_fkey = first_of_line & (tok_len == 1) & (head == 102)  # "f"
        # "fo", the old spelling of "f" (the OBJ spec keeps it), was dropped silently.
        second = a[np.minimum(tok_start + 1, a.shape[0] - 1)]
        is_fkey |= first_of_line & (tok_len == 2) & (head == 102) & (second == 111)
        v_line = np.zeros(n_lines, dtype=bool)
        v_line[tok_line[is_vkey]] = True
        f_line = np.zeros(n_lines, dtype=bool)
        f_line[tok_line[is_fkey]] = True
        # Errors are collected per kind; the one on the earliest line is raised.
        errors: list[tuple[int, str]] = []

        # Vertices: the first three numbers after "v" (more, w or colours, are ignored, but
        # must be numbers: "v 0 0 0<CR>v 1 0 0" with a lone CR, which ends no line here, or two
        # records on one line, lost the second vertex silently).
        v_tok = v_line[tok_line] & ~first_of_line
        per_line = np.bincount(tok_line[v_tok], minlength=n_lines)
        v_all = np.flatnonzero(v_tok)
        if v_all.shape[0] > 3 * int(np.count_nonzero(v_line)):
            line_of = tok_line[v_all]
            opens = np.r_[True, line_of[1:] != line_of[:-1]]
            rank = np.arange(v_all.shape[0]) - np.maximum.accumulate(
                np.where(opens, np.arange(v_all.shape[0]), 0)
            )
            extra = v_all[rank >= 3]
            _values, bad_extra = _to_numbers(a, tok_start[extra], tok_end[extra], np.float32)
            if bad_extra is not None:
                errors.append(
                    (
                        int(tok_line[extra[bad_extra]]),
                        "after the vertex's x y z comes something that is not a number (two "
                        "records on one line? a lone CR does not end a line here)",
                    )
                )
        short = np.flatnonzero(v_line & (per_line < 3))
        if short.shape[0]:
            errors.append((int(short[0]), "a vertex needs three coordinates x y z"))
        v_lines = np.flatnonzero(v_line)
        # Only the vertex lines before the first short one are read (a bad line before it wins).
        usable = v_lines if not short.shape[0] else v_lines[v_lines < short[0]]
        coords = np.zeros((0, 3), dtype=np.float32)
        if usable.shape[0]:
            v_idx = np.flatnonzero(v_tok)
            keys = np.flatnonzero(is_vkey)[: usable.shape[0]]
            first_coord = np.searchsorted(v_idx, keys + 1)
            pick = v_idx[(first_coord[:, None] + np.arange(3)).reshape(-1)]
            values, bad = _to_numbers(a, tok_start[pick], tok_end[pick], np.float32)
            if bad is not None:
                errors.append((int(tok_line[pick[bad]]), "a vertex coordinate is not a number"))
            coords = values[: values.shape[0] // 3 * 3].reshape(-1, 3)
            finite = np.isfinite(coords).all(axis=1)
            if not finite.all():
                errors.append(
                    (
                        int(usable[int(np.argmin(finite))]),
                        "a vertex coordinate is not a finite float32 number (NaN, infinite, "
                        "or beyond +-3.4e38); fix or remove that vertex",
                    )
                )

        # Faces: the vertex index before any '/' of each entry after "f".
        f_tok = f_line[tok_line] & ~first_of_line
        f_idx = np.flatnonzero(f_tok)
        tris = np.zeros((0, 3), dtype=np.int32)
        if f_idx.shape[0]:
            starts = tok_start[f_idx]
            ends = tok_end[f_idx]
            slash_at = np.flatnonzero(a == 47)
            head_end = ends
            if slash_at.shape[0]:
                k = np.searchsorted(slash_at, starts)
                slash = slash_at[np.minimum(k, slash_at.shape[0] - 1)]
                head_end = np.where((k < slash_at.shape[0]) & (slash < ends), slash, ends)
            numbers, bad = _to_numbers(a, starts, head_end, np.int64)
            if bad is not None:
                errors.append((int(tok_line[f_idx[bad]]), "a face index is not a whole number"))
            lines = tok_line[f_idx[: numbers.shape[0]]]
            defined = self.verts_before + np.cumsum(v_line) - v_line  # vertices before
            before = defined[lines]
            index = np.where(numbers > 0, numbers - 1, numbers + before)
            invalid = (numbers == 0) | (index < 0) | (index >= before)
            if invalid.any():
                j = int(np.argmax(invalid))
                original = int(numbers[j])
                count = int(before[j])
                if original in (_INT64.max, _INT64.min):  # NumPy's parse saturates there
                    why = (
                        f"a face index is beyond the 64-bit range, and only {count} vertices "
                        "are defined before it"
                    )
                elif original == 0:
                    why = "face index 0 is invalid (OBJ indices start at 1; -1 is the last)"
                elif original > 0:
                    why = (
                        f"face refers to vertex {original} but only {count} vertices are "
                        "defined before it"
                    )
                else:
                    why = (
                        f"face index {original} counts back past the first vertex: only "
                        f"{count} vertices are defined before it"
                    )
                errors.append((int(lines[j]), why))
            if not errors:
                starts, counts = _faces(lines)
                tris = _fan_triangles(index, starts, counts)
                if self.keep_polygons:
                    self._keep_polygons(index, starts, counts)
        if errors:
            line, message = min(errors)
            self._fail(buf, line_starts, line, message)
        self.face_lines += int(np.count_nonzero(f_line))
        if coords.shape[0]:
            self.vert_blocks.append(coords)
        if tris.shape[0]:
            self.tri_blocks.append(tris)
            self.tris_before += int(tris.shape[0])
        self.verts_before += int(v_lines.shape[0])
        self.lines_before += n_lines


_INT64 = np.iinfo(np.int64)


def _to_numbers(a: np.ndarray, starts: np.ndarray, ends: np.ndarray, dtype):
    """Convert the byte ranges ``a[starts:ends]`` (disjoint, ascending, each followed by a byte
    outside every range) to float32 or int64, exactly as Python's float/int read them.

    Returns (values, None), or (the values before it, position of the first range that is not
    a number).
    The fast path lets NumPy parse all ranges at once (its text parser uses Python's own
    correctly rounded string-to-double, so float32 values equal ``float32(float(text))``); each
    range must then be exactly one number followed by the ',' put after it, and a final
    sentinel proves that the last one was read to its end. Anything else takes the slow path,
    one Python conversion per range, which also finds the bad range.
    """
    count = starts.shape[0]
    depth = np.zeros(a.shape[0] + 1, dtype=np.int8)
    depth[starts] = 1
    depth[ends] = -1
    inside = np.cumsum(depth[:-1], dtype=np.int8).view(bool)
    text = np.where(inside, a, np.uint8(44))  # ',' after each range (and elsewhere) ...
    # Python's float and int take digit-group underscores ("1_0" is 10); no OBJ number has
    # them: the first range holding one is not a number.
    underscores = np.flatnonzero(text == np.uint8(95))
    if underscores.shape[0]:
        bad = int(np.searchsorted(starts, underscores[0], side="right")) - 1
        before, earlier = _to_numbers(a, starts[:bad], ends[:bad], dtype)
        return before, bad if earlier is None else earlier
    inside[ends] = True  # ... of which only the one right after each range is kept
    blob = text[inside]
    parse_as = np.float64 if dtype == np.float32 else np.int64
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            values = np.fromstring(blob.tobytes() + b"0,", dtype=parse_as, sep=",")
        except ValueError:
            values = np.zeros(0, dtype=parse_as)
    if values.shape[0] == count + 1:
        with np.errstate(over="ignore"):
            return values[:count].astype(dtype), None
    convert = float if dtype == np.float32 else int
    out = np.empty(count, dtype=dtype)
    for i, (s, e) in enumerate(zip(starts.tolist(), ends.tolist(), strict=True)):
        try:
            with np.errstate(over="ignore"):
                out[i] = convert(a[s:e].tobytes())
        except (ValueError, OverflowError):
            return out[:i], i
    return out, None


def _faces(lines: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(first entry, entry count) of each face, from ``lines``, the face line of each face
    entry in file order."""
    starts = np.flatnonzero(np.concatenate([[True], lines[1:] != lines[:-1]]))
    return starts, np.diff(np.concatenate([starts, [lines.shape[0]]]))


def _fan_triangles(index: np.ndarray, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """RecastDemo's fan (f0, f[i-1], f[i]) of each face; ``index`` are the 0-based vertex
    indices of all face entries in file order, ``starts``/``counts`` the faces (`_faces`)."""
    n_tris = np.maximum(counts - 2, 0)
    total = int(n_tris.sum())
    face = np.repeat(np.arange(starts.shape[0]), n_tris)
    step = np.arange(total) - np.repeat(np.cumsum(n_tris) - n_tris, n_tris)
    first = starts[face]
    tris = np.empty((total, 3), dtype=np.int32)
    tris[:, 0] = index[first]
    tris[:, 1] = index[first + step + 1]
    tris[:, 2] = index[first + step + 2]
    return tris


def read_obj(path, recast_frame: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Read an OBJ file into Z-up float32 vertices (n, 3) and int32 triangles (m, 3).

    ``path``: the .obj file. ``recast_frame``: mirror as RecastDemo (see the module docstring)
    instead of Blender's rotation. Raises `VoxNavError` naming the path (and the line) when the
    file cannot be read, is not an OBJ, has no faces, or has a bad vertex or face.
    """
    path = Path(path)
    reader = _Reader(path, keep_polygons=not recast_frame)
    if path.is_dir():
        raise _not_obj(path, "it is a folder")
    try:
        with open(path, "rb", buffering=0) as fh:  # unbuffered: a pipe yields what it has
            # A pipe may hand over a few bytes at a time: the byte-order mark is looked for in
            # the first three whatever the reads, and the line ends (CR alone, as old Mac
            # files have, or LF) are told from the first line end seen, not the first read.
            chunk = b""
            while len(chunk) < len(_BOM):
                more = fh.read(BLOCK_BYTES)
                if not more:
                    break
                chunk += more
            _check_text(path, chunk)
            if chunk.startswith(_BOM):
                chunk = chunk[len(_BOM) :] or fh.read(BLOCK_BYTES)  # empty would end it
            pending = b""
            cr_only: bool | None = None
            while True:
                if not chunk:
                    if pending:
                        if cr_only is None and b"\r" in pending:
                            pending = pending.replace(b"\r", b"\n")
                        reader.parse(pending + b"\n")
                    break
                if b"\x00" in chunk:
                    _check_text(path, chunk)
                data = pending + chunk if pending else chunk
                if _BOM in data:  # files joined end to end: a BOM before a record hid it
                    data = data.replace(_BOM, b"   ")
                if cr_only is None:  # a CR as the last byte may be half a CRLF: wait
                    if b"\n" in data:
                        cr_only = False
                    elif b"\r" in data[:-1]:
                        cr_only = True
                if cr_only:
                    data = data.replace(b"\r", b"\n")
                cut = data.rfind(b"\n") + 1
                if cut == 0:
                    pending = data
                    if len(pending) > MAX_LINE_BYTES:
                        raise _not_obj(
                            path, f"line {reader.lines_before + 1} is over {MAX_LINE_BYTES} bytes"
                        )
                else:
                    pending = data[cut:]
                    reader.parse(data[:cut])
                chunk = fh.read(BLOCK_BYTES)
    except OSError as exc:
        raise VoxNavError(f"cannot read OBJ file {path}: {exc.strerror or exc}") from exc
    if reader.verts_before == 0:
        if reader.lines_before == 0:
            raise _not_obj(path, "the file is empty")
        raise _not_obj(path, "it has no vertex (v) lines")
    if reader.face_lines == 0:
        raise VoxNavError(
            f"{path} has vertices but no faces (f lines): VoxNav needs polygons; export the "
            "mesh with its faces (not only points or lines)"
        )
    verts = _concat(reader.vert_blocks, np.float32)
    faces = _concat(reader.tri_blocks, np.int32)
    if not recast_frame:  # RecastDemo fans every face; a block's faces at a time
        for first_tri, counts, ids in reader.polygon_blocks:
            _clip_concave(verts, faces, first_tri, counts, ids)
    if faces.shape[0] == 0:  # a face of three or more vertices makes a triangle
        raise VoxNavError(
            f"{path}: each of its {reader.face_lines:,} faces (f lines) has fewer than three "
            "vertices, so there is no polygon to walk on: export the mesh with its faces (not "
            "only edges or points)"
        )
    if recast_frame:
        verts[:, [1, 2]] = verts[:, [2, 1]]
        faces[:, [1, 2]] = faces[:, [2, 1]]
        return verts, faces
    up = verts[:, 1].copy()
    np.negative(verts[:, 2], out=verts[:, 1])
    verts[:, 2] = up
    return verts, faces


def _clip_concave(
    verts: np.ndarray, faces: np.ndarray, first_tri: np.ndarray, counts: np.ndarray, ids
) -> None:
    """Mend in ``faces`` the fans of concave polygons: a fan from the first vertex of a
    concave face covers ground outside it (a U-shaped floor written as one face got floor
    across its gap: paths walked over it); such a face is ear-clipped instead, into as many
    triangles, in its winding. Convex faces keep RecastDemo's fan (the same surface). verts
    float32 (n, 3); first_tri int64 (p,) each polygon's first fan triangle, counts (p,) its
    vertex count, ids int (sum counts,) its vertex ids in order."""
    counts = counts.astype(np.int64)
    first = np.cumsum(counts) - counts
    for k in np.unique(counts).tolist():  # the faces of each size as one (faces, k) array
        which = np.flatnonzero(counts == k)
        ring = ids[first[which][:, None] + np.arange(k)]
        p = verts[ring].astype(np.float64)  # (faces, k, 3)
        q = np.roll(p, -1, axis=1)
        # Each face in the plane of its Newell normal's largest axis, counter-clockwise seen
        # from the normal's side (the other two axes in cyclic order, swapped when it points
        # down that axis). A corner turning clockwise there is a reflex corner; tested where
        # the clipping is, so a non-planar but convex face (a terrain quad) keeps its fan.
        normal = np.stack(
            [
                (p[..., 1] * q[..., 2] - p[..., 2] * q[..., 1]).sum(axis=1),
                (p[..., 2] * q[..., 0] - p[..., 0] * q[..., 2]).sum(axis=1),
                (p[..., 0] * q[..., 1] - p[..., 1] * q[..., 0]).sum(axis=1),
            ],
            axis=1,
        )
        axis = np.argmax(np.abs(normal), axis=1)
        down = np.take_along_axis(normal, axis[:, None], axis=1)[:, 0] < 0
        u_axis = np.where(down, (axis + 2) % 3, (axis + 1) % 3)
        v_axis = np.where(down, (axis + 1) % 3, (axis + 2) % 3)
        u = np.take_along_axis(p, u_axis[:, None, None], axis=2)[..., 0]
        v = np.take_along_axis(p, v_axis[:, None, None], axis=2)[..., 0]
        du, dv = np.roll(u, -1, axis=1) - u, np.roll(v, -1, axis=1) - v  # edge i -> i + 1
        pu, pv = np.roll(du, 1, axis=1), np.roll(dv, 1, axis=1)  # edge i - 1 -> i
        turn = pu * dv - pv * du
        size = np.hypot(pu, pv) * np.hypot(du, dv)
        concave = np.flatnonzero((turn < -1e-9 * size).any(axis=1))
        for face in concave.tolist():  # concave faces only: rare in exported meshes
            flat = np.stack([u[face], v[face]], axis=1)
            if not _simple(flat):  # a self-crossing outline has no inside: the fan stays
                continue
            tris = _ear_clip(flat)
            at = int(first_tri[which[face]])
            faces[at : at + len(tris)] = ring[face][np.asarray(tris, dtype=np.int64)]


#: Pairs of edges `_simple` tests at once (its temporaries: about 300 bytes a pair).
SIMPLE_PAIR_BLOCK = 1 << 18


def _simple(flat: np.ndarray) -> bool:
    """Whether the closed outline float64 (n, 2) has no two non-neighbouring edges that
    touch or cross (and so an inside an ear clipping keeps). Only edges whose x extents
    overlap can meet: those pairs are found from the edges sorted by their lowest x and
    tested in blocks (`SIMPLE_PAIR_BLOCK`); every pair at once took 24 GB for a
    20,000-corner face. Equal to `simple_literal` on float32 corners (the reader's); on
    float64 near-collinear runs that one's rounding can call edges apart in x crossing."""
    a, b = flat, np.roll(flat, -1, axis=0)
    n = flat.shape[0]
    lo_x, hi_x = np.minimum(a[:, 0], b[:, 0]), np.maximum(a[:, 0], b[:, 0])
    order = np.argsort(lo_x, kind="stable")
    sorted_lo = lo_x[order]
    # For the edge at sorted place k, the edges after it starting at most where it ends.
    ends = np.searchsorted(sorted_lo, hi_x[order], side="right")
    counts = np.maximum(ends - np.arange(n) - 1, 0)
    rows = np.repeat(np.arange(n), counts)
    cols = np.arange(rows.shape[0]) - np.repeat(np.cumsum(counts) - counts, counts) + rows + 1
    for first in range(0, rows.shape[0], SIMPLE_PAIR_BLOCK):
        e, f = (
            order[rows[first : first + SIMPLE_PAIR_BLOCK]],
            order[cols[first : first + SIMPLE_PAIR_BLOCK]],
        )
        i, j = np.minimum(e, f), np.maximum(e, f)
        apart = (j - i >= 2) & ~((i == 0) & (j == n - 1))  # neighbouring edges meet
        if _edges_meet(a, b, i[apart], j[apart]).any():
            return False
    return True


def _edges_meet(a: np.ndarray, b: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Whether edge i (a[i] -> b[i]) and edge j touch or cross, per pair (bool). a, b float64
    (n, 2) each edge's ends; i, j int (p,)."""

    def side(p, q, r):  # sign of the turn p -> q -> r, for every pair (broadcast)
        return np.sign((q[..., 0] - p[..., 0]) * (r[..., 1] - p[..., 1])
                       - (q[..., 1] - p[..., 1]) * (r[..., 0] - p[..., 0]))  # fmt: skip

    d1, d2 = side(a[j], b[j], a[i]), side(a[j], b[j], b[i])
    d3, d4 = side(a[i], b[i], a[j]), side(a[i], b[i], b[j])
    crossing = (d1 * d2 <= 0) & (d3 * d4 <= 0)
    # On one line (all four turns 0) they meet only where their extents overlap.
    in_line = (d1 == 0) & (d2 == 0)
    lo_i, hi_i = np.minimum(a[i], b[i]), np.maximum(a[i], b[i])
    lo_j, hi_j = np.minimum(a[j], b[j]), np.maximum(a[j], b[j])
    overlap = ((lo_i <= hi_j) & (lo_j <= hi_i)).all(axis=1)
    return crossing & (~in_line | overlap)


def simple_literal(flat: np.ndarray) -> bool:
    """`_simple` over every pair of edges at once (the tests' oracle)."""
    a, b = flat, np.roll(flat, -1, axis=0)
    n = flat.shape[0]
    i, j = np.triu_indices(n, 2)
    apart = ~((i == 0) & (j == n - 1))
    return not bool(_edges_meet(a, b, i[apart], j[apart]).any())


#: Corner tests (corner, other corner) `_ear_clip` makes at once for its first ears.
EAR_TEST_BLOCK = 1 << 20


def _ear_clip(flat: np.ndarray) -> list[tuple[int, int, int]]:
    """Triangles (corner numbers, in the polygon's order) of a simple polygon given as float64
    (n, 2) counter-clockwise points: n - 2 of them, the very ones `ear_clip_literal` cuts.

    The corners stay in a ring (previous / next); each keeps whether it is convex and an
    ear (convex, its triangle holding no other corner, edges included). Cutting a corner
    changes only its two neighbours' triangles, and can only turn a corner whose triangle
    held the cut one into an ear: those are tested again, with NumPy over every corner left.
    The literal port tests every corner's triangle against every corner at every cut (a
    3,000-corner face took 24 s)."""
    n = flat.shape[0]
    if n == 3:
        return [(0, 1, 2)]
    x, y = flat[:, 0], flat[:, 1]
    nxt = np.roll(np.arange(n), -1)
    prv = np.roll(np.arange(n), 1)
    alive = np.ones(n, dtype=bool)

    def cross(o, a, q_x, q_y):  # the literal port's turn o -> a -> q, for arrays of q
        return (x[a] - x[o]) * (q_y - y[o]) - (y[a] - y[o]) * (q_x - x[o])

    def convex_at(c: np.ndarray) -> np.ndarray:
        return cross(prv[c], c, x[nxt[c]], y[nxt[c]]) > 0

    def holds(c, q: np.ndarray) -> np.ndarray:
        """Which corners q lie in corner c's triangle (edges included); c a corner, or an
        array of them broadcast against q."""
        a, d = prv[c], nxt[c]
        qx, qy = x[q], y[q]
        return (cross(a, c, qx, qy) >= 0) & (cross(c, d, qx, qy) >= 0) & (cross(d, a, qx, qy) >= 0)

    def ear_at(c: int) -> bool:
        others = np.flatnonzero(alive)
        others = others[(others != prv[c]) & (others != c) & (others != nxt[c])]
        return not bool(holds(c, others).any())

    convex = convex_at(np.arange(n))
    ear = np.zeros(n, dtype=bool)
    corners = np.flatnonzero(convex)
    block = max(1, EAR_TEST_BLOCK // n)
    for first in range(0, corners.shape[0], block):  # the first ears, a block of corners at once
        mid = corners[first : first + block, None]
        q = np.arange(n)[None, :]
        held = holds(mid, q) & (q != prv[mid]) & (q != mid) & (q != nxt[mid])
        ear[corners[first : first + block]] = ~held.any(axis=1)
    out: list[tuple[int, int, int]] = []
    left = n
    while left > 3:
        ears = np.flatnonzero(ear)
        if ears.shape[0]:
            cut = int(ears[0])
        else:  # a self-touching outline: the first convex corner, else the first corner
            corners = np.flatnonzero(convex & alive)
            cut = int(corners[0]) if corners.shape[0] else int(np.flatnonzero(alive)[0])
        a, d = int(prv[cut]), int(nxt[cut])
        out.append((a, cut, d))
        alive[cut] = convex[cut] = ear[cut] = False
        nxt[a], prv[d] = d, a
        left -= 1
        if left == 3:
            break
        for c in (a, d):
            convex[c] = bool(convex_at(np.array([c]))[0])
            ear[c] = convex[c] and ear_at(c)
        # Corners whose triangle held the cut one may be ears now (nothing else changed).
        waiting = np.flatnonzero(convex & ~ear)
        waiting = waiting[(waiting != a) & (waiting != d)]
        for c in waiting.tolist():
            if holds(c, np.array([cut]))[0]:
                ear[c] = ear_at(c)
    last = np.flatnonzero(alive)
    out.append((int(last[0]), int(last[1]), int(last[2])))
    return out


def ear_clip_literal(flat: np.ndarray) -> list[tuple[int, int, int]]:
    """`_ear_clip` as first written (the tests' oracle): each round, the first convex corner
    (in the polygon's order) whose triangle holds no other corner is cut; should none be found
    (a self-touching outline) the first convex corner, else the first corner, so n - 2
    triangles always come out."""
    left = list(range(flat.shape[0]))
    out: list[tuple[int, int, int]] = []

    def cross(o, a, b) -> float:
        return float((a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]))

    while len(left) > 3:
        n = len(left)
        convex = []
        for k in range(n):
            a, b, c = flat[left[k - 1]], flat[left[k]], flat[left[(k + 1) % n]]
            if cross(a, b, c) > 0:
                convex.append(k)
        cut = None
        for k in convex:
            a, b, c = flat[left[k - 1]], flat[left[k]], flat[left[(k + 1) % n]]
            inside = False
            for m in left:
                if m in (left[k - 1], left[k], left[(k + 1) % n]):
                    continue
                q = flat[m]
                if cross(a, b, q) >= 0 and cross(b, c, q) >= 0 and cross(c, a, q) >= 0:
                    inside = True
                    break
            if not inside:
                cut = k
                break
        if cut is None:
            cut = convex[0] if convex else 0
        out.append((left[cut - 1], left[cut], left[(cut + 1) % n]))
        del left[cut]
    out.append((left[0], left[1], left[2]))
    return out


def _concat(blocks: list[np.ndarray], dtype) -> np.ndarray:
    if len(blocks) == 1:
        return blocks[0]
    if not blocks:
        return np.zeros((0, 3), dtype=dtype)
    return np.concatenate(blocks)
