"""The streamed OBJ reader: equal to the line-by-line oracle, BOM and indentation, messages that
name the file line, refusal of files that are not OBJ meshes, bounded memory."""

from __future__ import annotations

import os
import threading
import tracemalloc

import numpy as np
import pytest

from core import objio
from core.errors import VoxNavError
from core.objio import read_obj

from .oracle import read_obj_lines

PLAIN = """\
# a room
o room
v 0 0 0
v 4 0 0
v 4 0 4
v 0 0 4
vn 0 1 0
vt 0 0
f 1 2 3 4
v 1 2 1
v 3 2 1
v 2 2 3
f -3/1 -2/1/1 -1//1
"""


def _write(path, data: str | bytes):
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _oracle_zup(path):
    """The oracle's result in the recast frame, as read_obj(recast_frame=True) returns it."""
    verts, tris = read_obj_lines(path)
    return verts[:, [0, 2, 1]], tris[:, [0, 2, 1]]


def _assert_same(a, b):
    assert a[0].dtype == b[0].dtype == np.float32 and a[1].dtype == b[1].dtype == np.int32
    assert a[0].tobytes() == b[0].tobytes() and a[0].shape == b[0].shape
    assert np.array_equal(a[1], b[1])


def test_a_byte_order_mark_changes_nothing(tmp_path):
    plain = read_obj(_write(tmp_path / "plain.obj", PLAIN))
    bom = read_obj(_write(tmp_path / "bom.obj", b"\xef\xbb\xbf" + PLAIN.encode()))
    _assert_same(bom, plain)
    first_vertex_first = b"\xef\xbb\xbf" + PLAIN.split("o room\n")[1].encode()
    _assert_same(read_obj(_write(tmp_path / "bom2.obj", first_vertex_first)), plain)


def test_indented_records_count(tmp_path):
    indented = "".join(
        ("  ", "\t", " \t ", "")[i % 4] + line.replace(" ", " \t", i % 2) + ("\r" if i % 3 else "")
        for i, line in enumerate(PLAIN.splitlines(keepends=True))
    )
    plain = read_obj(_write(tmp_path / "plain.obj", PLAIN))
    _assert_same(read_obj(_write(tmp_path / "indented.obj", indented)), plain)
    assert plain[0].shape == (7, 3) and plain[1].shape == (3, 3)


def test_negative_indices_equal_positive_ones(tmp_path):
    positive = PLAIN.replace("f -3/1 -2/1/1 -1//1", "f 5/1 6/1/1 7//1")
    assert positive != PLAIN
    _assert_same(read_obj(_write(tmp_path / "neg.obj", PLAIN)),
                 read_obj(_write(tmp_path / "pos.obj", positive)))  # fmt: skip
    relative = "v 0 0 0\nv 1 0 0\nv 1 0 1\nf -3 -2 -1\nv 0 0 1\nf -4 -2 -1\n"
    absolute = "v 0 0 0\nv 1 0 0\nv 1 0 1\nf 1 2 3\nv 0 0 1\nf 1 3 4\n"
    _assert_same(read_obj(_write(tmp_path / "r.obj", relative)),
                 read_obj(_write(tmp_path / "a.obj", absolute)))  # fmt: skip


def _random_obj(rng, n_lines: int) -> str:
    """Valid OBJ text with every form the reader accepts, faces using only earlier vertices."""
    out, n_verts = [], 0
    for _ in range(n_lines):
        pad = ["", " ", "\t", "  \t"][rng.integers(4)]
        sep = [" ", "\t", "  ", " \t "][rng.integers(4)]
        end = ["\n", "\r\n", " \n", " # note\n"][rng.integers(4)]
        kind = rng.integers(10)
        if kind < 4 or n_verts < 3:
            xyz = rng.normal(size=3) * 10.0 ** rng.integers(-2, 5)
            fmt = ["{:.9g}", "{:.3f}", "{:+.4e}", "{:.0f}"][rng.integers(4)]
            extra = [f"{c:.3f}" for c in rng.random(3)] if rng.random() < 0.2 else []
            out.append(pad + "v" + sep + sep.join([fmt.format(c) for c in xyz] + extra) + end)
            n_verts += 1
        elif kind < 8:
            entries = []
            for _ in range(int(rng.integers(3, 7))):
                i = int(rng.integers(1, n_verts + 1))
                index = str(i) if rng.random() < 0.6 else str(i - n_verts - 1)
                form = ["{}", "{}/1", "{}//2", "{}/3/4"][rng.integers(4)]
                entries.append(form.format(index))
            out.append(pad + "f" + sep + sep.join(entries) + end)
        else:
            other = ["# c", "vn 0 1 0", "vt 0.5 0.5", "g part", "s off", ""][kind % 6]
            out.append(pad + other + end)
    return "".join(out)


@pytest.mark.parametrize("block", [7, 64, 4096, None])
def test_equals_the_line_by_line_oracle_on_random_files(tmp_path, monkeypatch, block):
    if block is not None:
        monkeypatch.setattr(objio, "BLOCK_BYTES", block)
    rng = np.random.default_rng(block or 1)
    for k in range(4):
        path = _write(tmp_path / f"r{k}.obj", _random_obj(rng, 400))
        _assert_same(read_obj(path), _oracle_zup(path))
        v_blender, t_blender = read_obj(path, recast_frame=False)
        v_file, t_file = read_obj_lines(path)
        assert np.array_equal(v_blender, np.stack([v_file[:, 0], -v_file[:, 2], v_file[:, 1]], 1))
        _assert_fans_or_ears(path, v_file, t_file, t_blender)


def _face_sizes(path) -> list[int]:
    """The vertex counts of the file's faces of three or more vertices, in order (tokens as
    the line oracle splits them)."""
    sizes = []
    for raw in path.read_bytes().split(b"\n"):
        tokens = raw.split()
        for i, token in enumerate(tokens):
            if token.startswith(b"#"):
                tokens = tokens[:i]
                break
        if tokens and tokens[0] == b"f" and len(tokens) >= 4:
            sizes.append(len(tokens) - 1)
    return sizes


def _cross2(a, b):
    return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]


def _assert_fans_or_ears(path, v_file, t_file, t_read):
    """Outside the Recast frame every face is its fan (the line oracle's), except a concave,
    simple one, which is a triangulation of it instead: n - 2 triangles of its own vertices,
    each turning as the face, together its area (a fan would cover ground outside it)."""
    from core.objio import _simple

    assert t_read.shape == t_file.shape
    k = 0
    for n in _face_sizes(path):
        fan, got = t_file[k : k + n - 2], t_read[k : k + n - 2]
        k += n - 2
        if np.array_equal(fan, got):
            continue
        ring = np.r_[fan[0, 0], fan[:, 1], fan[-1, 2]]
        p = v_file[ring].astype(np.float64)
        normal = np.cross(p, np.roll(p, -1, axis=0)).sum(axis=0)
        axis = int(np.argmax(np.abs(normal)))
        flat = p[:, [(axis + 1) % 3, (axis + 2) % 3]]
        if normal[axis] < 0:
            flat = flat[:, ::-1]
        turns = _cross2(flat - np.roll(flat, 1, axis=0), np.roll(flat, -1, axis=0) - flat)
        assert turns.min() < 0 and _simple(flat), "only concave simple faces are clipped"
        assert set(got.ravel().tolist()) <= set(ring.tolist())
        where = {int(v): i for i, v in enumerate(ring)}
        tri = flat[[[where[int(v)] for v in t] for t in got]]
        areas = _cross2(tri[:, 1] - tri[:, 0], tri[:, 2] - tri[:, 0]) / 2
        outline = _cross2(flat, np.roll(flat, -1, axis=0)).sum() / 2
        assert (areas > -1e-9).all() and areas.sum() == pytest.approx(outline, rel=1e-9)


def test_a_concave_face_is_ear_clipped_outside_the_recast_frame(tmp_path):
    # A U-shaped floor as one face: the fan from its first corner covered the U's gap, so
    # paths walked across it. RecastDemo (the Recast frame) fans it all the same.
    u = [(0, 20), (10, 20), (10, 10), (20, 10), (20, 20), (30, 20), (30, 0), (0, 0)]
    text = "".join(f"v {x} 0 {z}\n" for x, z in u) + "f 1 2 3 4 5 6 7 8\n"
    path = _write(tmp_path / "u.obj", text)

    def covers(verts, tris, point) -> int:
        a, b, c = (verts[tris[:, i], :2].astype(np.float64) for i in range(3))
        s1, s2, s3 = (np.sign(_cross2(q - p, point - p)) for p, q in ((a, b), (b, c), (c, a)))
        return int(((s1 == s2) & (s2 == s3)).sum())

    verts, tris = read_obj(path, recast_frame=False)
    assert tris.shape == (6, 3) and covers(verts, tris, np.array([15.0, -15.0])) == 0
    assert covers(verts, tris, np.array([5.0, -15.0])) == 1  # an arm of the U
    fan_verts, fan = read_obj(path)
    assert covers(fan_verts, fan, np.array([15.0, 15.0])) >= 1
    v_file, t_file = read_obj_lines(path)
    _assert_fans_or_ears(path, v_file, t_file, tris)


@pytest.mark.parametrize("name", ["dungeon", "nav_test", "undulating", "house", "bridge"])
def test_equals_the_line_by_line_oracle_on_the_shared_meshes(name):
    from .refdata import mesh_path

    path = mesh_path(name)
    _assert_same(read_obj(path), _oracle_zup(path))


BAD = [
    ("v 0 0 0\nv 1 0 0\nv nan 0 1\nf 1 2 3\n", r":3: 'v nan 0 1': .*not a finite"),
    ("v 0 0 0\n# x\nv 1 0 1e39\nv 1 0 1\nf 1 2 3\n", r":3: 'v 1 0 1e39': .*not a finite"),
    ("v 0 0 0\nv 1 0 0\n\nv 1 -inf 1\nf 1 2 3\n", r":4: 'v 1 -inf 1': .*not a finite"),
    ("v 0 0 0\nv 1 0 0\nv 1 0 1\nf 1 2 0\n", r":4: 'f 1 2 0': face index 0 is invalid"),
    ("v 0 0 0\nv 1 0 0\nv 1 0 1\nf 1 2 9\n", r":4: 'f 1 2 9': .*vertex 9 but only 3"),
    ("v 0 0 0\nv 1 0 0\nf 1 2 3\nv 1 0 1\n", r":3: 'f 1 2 3': .*vertex 3 but only 2"),
    ("v 0 0 0\nv 1 0 0\nv 1 0 1\nf -1 -2 -4\n", r":4: 'f -1 -2 -4': face index -4 counts back"),
    ("v 0 0 0\nv 1 0 0\nv 1 0 1\nf 1 2 x\n", r":4: 'f 1 2 x': .*not a whole number"),
    ("v 0 0 0\nv 1 0\nv 1 0 1\nf 1 2 3\n", r":2: 'v 1 0': .*three coordinates"),
    ("v 0 0 0\nv 1 zero 0\nv 1 0 1\nf 1 2 3\n", r":2: 'v 1 zero 0': .*not a number"),
    # A lone CR ends no line: the second vertex was dropped, faces took shifted vertices.
    ("v 0 0 0\nv 1 0 0\rv 9 0 0\nv 1 0 1\nf 1 2 3\n", r":2: .*not a number \(two records"),
    ("v 0 0 0 1\nv 1 0 0 v 2 0 0\nv 1 0 1\nf 1 2 3\n", r":2: .*not a number \(two records"),
    ("v 0 0 0\nv 1 0 0\nv 1 0 1\nf 1 2 \\\n3\n", r":4: .*whole number \(a trailing backslash"),
    # Python's float and int take digit-group underscores: "1_0" was read as 10.
    ("v 0 0 0\nv 1_0 0 0\nv 1 0 1\nf 1 2 3\n", r":2: 'v 1_0 0 0': .*not a number"),
    ("v 0 0 0\nv 1 0 0\nv 1 0 1\nf 1 3 0_2\n", r":4: 'f 1 3 0_2': .*not a whole number"),
]


@pytest.mark.parametrize("text, message", BAD)
def test_bad_lines_are_named_by_file_line(tmp_path, text, message):
    path = _write(tmp_path / "bad.obj", text)
    with pytest.raises(VoxNavError, match="bad.obj" + message):
        read_obj(path)


def test_first_bad_line_wins_and_line_numbers_span_blocks(tmp_path, monkeypatch):
    monkeypatch.setattr(objio, "BLOCK_BYTES", 16)
    text = "v 0 0 0\n" * 50 + "f 1 2 3\n" * 20 + "f 1 2 99\n" + "v nan 0 0\n"
    with pytest.raises(VoxNavError, match=r"bad.obj:71: 'f 1 2 99'"):
        read_obj(_write(tmp_path / "bad.obj", text))
    monkeypatch.setattr(objio, "BLOCK_BYTES", 1 << 16)
    for text, line in [
        ("v 0 0 0\nv nan 0 0\nv 1 zero 0\n", "2: 'v nan 0 0'"),  # NaN before a non-number
        ("v 0 0 0\nv inf 0 0\nv 1 0\n", "2: 'v inf 0 0'"),  # NaN before a short vertex
        ("v 0 0 0\nv 1 0 0\nv 1 1 0\nf 1 2 9\nf 1 2 x\n", "4: 'f 1 2 9'"),  # range, then text
        ("v 0 0 0\nf 1 2 x\nv 1 0\n", "2: 'f 1 2 x'"),  # a face before a short vertex
    ]:
        with pytest.raises(VoxNavError, match=f"bad.obj:{line}"):
            read_obj(_write(tmp_path / "bad.obj", text))


@pytest.mark.parametrize(
    "data, message",
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "is not a Wavefront OBJ: it is a PNG image"),
        (bytes(range(256)) * 4, "is not a Wavefront OBJ: it contains binary data"),
        (b"", "is not a Wavefront OBJ: the file is empty"),
        (b"hello\nthis is a note\n", "is not a Wavefront OBJ: it has no vertex"),
        (b"BLENDER-v500" + bytes(20), "is not a Wavefront OBJ: it is a Blender .blend file"),
        (b"v 0 0 0\nv 1 0 0\nv 1 0 1\nl 1 2\n", "has vertices but no faces \\(f lines\\)"),
    ],
)
def test_files_that_are_not_obj_meshes_are_named(tmp_path, data, message):
    path = _write(tmp_path / "input.obj", data)
    with pytest.raises(VoxNavError, match="input.obj " + message) as info:
        read_obj(path)
    assert "add or select mesh objects" not in str(info.value)


def test_a_folder_is_not_an_obj(tmp_path):
    with pytest.raises(VoxNavError, match="is not a Wavefront OBJ: it is a folder"):
        read_obj(tmp_path)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a FIFO")
def test_a_bad_line_is_reported_before_the_rest_is_read(tmp_path):
    """The writer keeps the pipe open after the bad line: the reader must not wait for more."""
    fifo = tmp_path / "stream.obj"
    os.mkfifo(fifo)
    release = threading.Event()
    still_open_when_raised = []

    def writer():
        with open(fifo, "wb") as fh:
            fh.write(b"v 0 0 0\nv 1 0 0\nf 1 2 7\n")
            fh.flush()
            release.wait(10)

    thread = threading.Thread(target=writer)
    thread.start()
    try:
        with pytest.raises(VoxNavError, match=r"stream.obj:3: 'f 1 2 7'"):
            try:
                read_obj(fifo)
            finally:
                still_open_when_raised.append(not release.is_set() and thread.is_alive())
    finally:
        release.set()
        thread.join()
    assert still_open_when_raised == [True]


def test_memory_is_a_small_multiple_of_the_arrays(tmp_path, monkeypatch):
    block = 1 << 16
    monkeypatch.setattr(objio, "BLOCK_BYTES", block, raising=False)
    n = 220  # a terrain grid: ~48k vertices and ~48k quads, about 3 MB of text
    x, z = np.meshgrid(np.arange(n) * 0.5, np.arange(n) * 0.5)
    y = np.random.default_rng(0).random(x.shape) * 3
    xyz = np.stack([x.ravel(), y.ravel(), z.ravel()], 1).tolist()
    lines = [f"v {a:.6f} {b:.6f} {c:.6f}\n" for a, b, c in xyz]
    corner = (np.arange(n - 1)[:, None] * n + np.arange(n - 1)[None, :]).ravel() + 1
    lines += [f"f {p} {p + n} {p + n + 1} {p + 1}\n" for p in corner.tolist()]
    path = _write(tmp_path / "terrain.obj", "".join(lines))
    del lines
    tracemalloc.start()
    try:
        verts, tris = read_obj(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    parsed = verts.nbytes + tris.nbytes
    assert tris.shape == (2 * (n - 1) ** 2, 3)
    # The parsed arrays twice (blocks, then joined) plus one block's working arrays.
    assert peak < 3 * parsed + 40 * block, (peak, parsed, path.stat().st_size)


@pytest.mark.parametrize(
    "data, words",
    [
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "is not a Wavefront OBJ: it is a PNG image"),
        (b"", "is not a Wavefront OBJ: the file is empty"),
        (b"v 0 0 0\nv 1 0 0\nv 1 0 1\n", "has vertices but no faces (f lines)"),
        (b"v 0 0 0\nv 1 0 0\nv nan 0 1\nf 1 2 3\n", "input.obj:3: 'v nan 0 1'"),
        (b"v 0 0 0\nv 1 0 0\nv 1 0 1\nf 1 2 -4\n", "input.obj:4: 'f 1 2 -4': face index -4"),
    ],
)
def test_cli_names_the_input_problem(tmp_path, capsys, data, words):
    from core.__main__ import main

    path = _write(tmp_path / "input.obj", data)
    assert main(["bake", str(path), "--out", str(tmp_path / "nav.obj")]) == 1
    err = capsys.readouterr().err
    assert words in err and "add or select mesh objects" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["input.obj"]


class _Pieces:
    """A pipe's reads: each ``read`` hands over the next piece (then b"": the end)."""

    def __init__(self, pieces):
        self.pieces = list(pieces)

    def read(self, _size):
        return self.pieces.pop(0) if self.pieces else b""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize(
    "pieces",
    [
        [b"\xef\xbb\xbf", b"v 0 0 0\nv 1 0 0\nv 2 0 0\nv 2 0 2\nv 0 0 2\nf 2 4 3\n"],
        [b"\xef", b"\xbb\xbfv 0 0 0\nv 1 0 0\nv 2 0 0\n", b"v 2 0 2\nv 0 0 2\nf 2 4 3\n"],
        [b"v 0 0 0", b"\rv 1 0 0\rv 2 0 0\rv 2 0 2\rv 0 0 2\rf 2 4 3\r"],
        [b"v 0 0 0\r", b"\nv 1 0 0\r\nv 2 0 0\r\nv 2 0 2\r\nv 0 0 2\r\nf 2 4 3\r\n"],
    ],
)
def test_a_pipe_reads_the_same_however_its_bytes_arrive(tmp_path, monkeypatch, pieces):
    # The byte-order mark and CR-only line ends were told from the first read alone: a BOM
    # arriving alone read as an empty file, one split 1 + 2 dropped the first vertex, a CR
    # file whose first read had no CR was one line ("no faces").
    whole = _write(tmp_path / "whole.obj", b"".join(pieces))
    expected = read_obj(whole)
    monkeypatch.setattr(objio, "open", lambda *a, **k: _Pieces(pieces), raising=False)
    _assert_same(read_obj(tmp_path / "piped.obj"), expected)


def test_a_long_bad_line_is_quoted_shortened(tmp_path):
    # A bad index in a 200,000-vertex face quoted the whole 1.3 MB line.
    n = 3000
    text = "v 0 0 0\n" * n + "f " + " ".join(str(i + 1) for i in range(n)) + f" {n + 1}\n"
    with pytest.raises(VoxNavError) as caught:
        read_obj(_write(tmp_path / "big.obj", text))
    message = str(caught.value)
    assert len(message) < 400 and f"face refers to vertex {n + 1}" in message
    assert f"({len(text.splitlines()[-1]):,} characters)" in message


def test_joined_files_and_old_fo_faces_are_read(tmp_path):
    # Two exports joined end to end: the second one's byte-order mark hid its first vertex
    # and a relative face took a vertex of the first part; "fo" faces were dropped silently.
    part = "v 0 0 0\nv 10 0 0\nv 10 0 10\nf -3 -2 -1\n"
    joined = _write(tmp_path / "joined.obj", ("\ufeff" + part) * 2)
    _verts, tris = read_obj(joined)
    assert tris.tolist() == [[0, 2, 1], [3, 5, 4]]
    old = _write(tmp_path / "old.obj", "v 0 0 0\nv 10 0 0\nv 10 0 10\nfo 1 2 3\n")
    assert read_obj(old)[1].tolist() == [[0, 2, 1]]


def _outlines(seed: int, count: int):
    """Random outlines: star-shaped (simple), snapped to a coarse grid (collinear and
    repeated corners), and random points (self-crossing: the fallbacks)."""
    rng = np.random.default_rng(seed)
    for trial in range(count):
        n = int(rng.integers(3, 40))
        angle = np.sort(rng.uniform(0, 2 * np.pi, n))
        radius = rng.uniform(0.2, 1.0, n)
        flat = np.stack([np.cos(angle) * radius, np.sin(angle) * radius], axis=1)
        if trial % 3 == 0:
            flat = np.round(flat * 3) / 3
        if trial % 11 == 0 and n > 4:
            flat[2] = flat[1]
        if trial % 7 == 0:
            flat = rng.uniform(-1, 1, (n, 2))
        yield flat.astype(np.float32).astype(np.float64)  # the reader's float32 corners


def test_ear_clipping_and_the_simplicity_test_equal_their_literal_ports():
    """Both were quadratic to cubic in Python and NumPy memory: one 3,000-corner concave face
    took 13 s and 0.7 GB to read, 20,000 corners 24 GB and 'out of memory'. The fast forms
    cut the very same triangles and give the same verdicts on float32 corners (the reader's;
    on float64 near-collinear runs the literal test can call edges that do not overlap in x
    crossing, a review found)."""
    from core.objio import _ear_clip, _simple, ear_clip_literal, simple_literal

    for flat in _outlines(17, 600):
        assert _simple(flat) == simple_literal(flat)
        assert _ear_clip(flat) == ear_clip_literal(flat)


def test_a_big_concave_face_is_clipped_into_its_own_triangles(tmp_path):
    """A 3,000-corner circle with one corner pulled in, as one face: n - 2 triangles, the
    notch left out (a fan from its first corner covers it). It took 13 s and 0.7 GB to bake
    (the clipping), 20,000 corners ran out of memory."""
    n = 3000
    angle = -2 * np.pi * np.arange(n) / n
    radius = np.where(np.arange(n) == n // 2, 5.0, 10.0)
    lines = [
        f"v {r * np.cos(a):.6f} 0 {r * np.sin(a):.6f}" for a, r in zip(angle, radius, strict=True)
    ]
    lines.append("f " + " ".join(str(i + 1) for i in range(n)))
    path = tmp_path / "notch.obj"
    path.write_text("\n".join(lines) + "\n")
    verts, tris = read_obj(path, recast_frame=False)  # Blender's frame: concave faces clipped
    assert tris.shape == (n - 2, 3)
    corners = verts[tris].astype(np.float64)[..., :2]
    tip = verts[n // 2, :2].astype(np.float64)  # the pulled-in corner, 5 from the centre

    def covering(point) -> int:
        a, b, c = corners[:, 0] - point, corners[:, 1] - point, corners[:, 2] - point
        turns = np.stack([_cross2(a, b), _cross2(b, c), _cross2(c, a)], axis=1)
        return int(((turns >= 0).all(axis=1) | (turns <= 0).all(axis=1)).sum())

    # Between the tip and the rim is the notch: no triangle there (the fan covered it).
    for share in (1.2, 1.6, 1.9):
        assert covering(tip * share) == 0
    assert covering(-tip) >= 1 and covering(np.zeros(2)) >= 1
