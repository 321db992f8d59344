"""The tile cache beside the .blend (obstacles live again after reopening, no rebake), tiled
bakes step by step ("tile k of n"), tiles in worker processes or threads, and the batch
command's --tile-size / --workers."""

from __future__ import annotations

import importlib
import os

import numpy as np
import pytest

from .scenes import box
from .test_obstacles import _mod, _scene, _walkable_under


def _drain(steps):
    seen = []
    while True:
        try:
            seen.append(next(steps))
        except StopIteration as stop:
            return stop.value, seen


def _tiles_of(live_tiles):
    cache = live_tiles.cache
    return {k: (t.polymesh.verts, t.polymesh.polys, t.detail.tris) for k, t in cache.tiles.items()}


def _assert_same_tiles(a, b):
    assert a.keys() == b.keys()
    for key, arrays in a.items():
        for x, y in zip(arrays, b[key], strict=True):
            assert x.dtype == y.dtype and np.array_equal(x, y), key


def _no_rebake(ext, monkeypatch):
    tilecache = importlib.import_module(f"{ext.root.__name__}.core.tilecache")

    def refuse(*args, **kwargs):
        raise AssertionError("a full tiled bake ran")

    monkeypatch.setattr(tilecache.TileCache, "build_steps", refuse)
    monkeypatch.setattr(ext.pipeline, "bake", refuse)


def test_reopened_blend_loads_the_tile_cache_and_obstacles_rebuild_without_a_rebake(
    bpy, ext, tmp_path, monkeypatch
):
    obstacles = _mod(ext, "obstacles")
    io = importlib.import_module(f"{ext.root.__name__}.core.tilecache_io")
    _scene(bpy, ext)
    scene = bpy.context.scene
    key = scene.voxnav.tile_cache_key
    assert key and io.read_key(obstacles.user_cache_path(key)) == key
    baked = _tiles_of(obstacles.CACHES[scene.session_uid])
    blend = tmp_path / "level.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    sidecar = tmp_path / "level.voxnav-tiles.Scene.npz"
    assert obstacles.sidecar_path(scene) == str(sidecar) and io.read_key(sidecar) == key

    _no_rebake(ext, monkeypatch)
    bpy.ops.wm.read_homefile(use_empty=True)
    assert not obstacles.CACHES
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    scene = bpy.context.scene
    live_tiles = obstacles.CACHES[scene.session_uid]
    assert "tile cache loaded from level.voxnav-tiles.Scene.npz" in scene.voxnav.obstacle_status
    assert len(live_tiles.obstacles) == 1 and live_tiles.key == key
    _assert_same_tiles(_tiles_of(live_tiles), baked)  # the crate is painted again, as baked
    # The crate moves: only its tiles rebuild, from the loaded cache.
    assert not _walkable_under(live_tiles, (-7.0, -7.0))
    bpy.data.objects["Crate"].location = (7.0, 7.0, 0.0)
    bpy.context.view_layer.update()
    assert 0 < scene.voxnav.obstacle_tiles_rebuilt < 25
    assert _walkable_under(live_tiles, (-7.0, -7.0))
    assert not _walkable_under(live_tiles, (7.0, 7.0))


def test_a_missing_or_damaged_tile_cache_is_a_clear_message_and_the_next_change_rebakes(
    bpy, ext, tmp_path
):
    obstacles = _mod(ext, "obstacles")
    io = importlib.import_module(f"{ext.root.__name__}.core.tilecache_io")
    _scene(bpy, ext)
    blend = tmp_path / "level.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    key = bpy.context.scene.voxnav.tile_cache_key
    sidecar = tmp_path / "level.voxnav-tiles.Scene.npz"
    sidecar.write_bytes(sidecar.read_bytes()[:200])  # cut short
    os.remove(obstacles.user_cache_path(key))
    bpy.ops.wm.open_mainfile(filepath=str(blend))  # no traceback: a status line
    scene = bpy.context.scene
    assert scene.session_uid not in obstacles.CACHES
    status = scene.voxnav.obstacle_status
    assert "no usable tile cache" in status and "is unreadable" in status
    assert "no tile cache at" in status and "rebakes all tiles once" in status
    # The next obstacle change rebakes all tiles (once) and saves a good cache again.
    bpy.data.objects["Crate"].location = (7.0, 7.0, 0.0)
    bpy.context.view_layer.update()
    assert "rebaked all tiles" in scene.voxnav.obstacle_status
    live_tiles = obstacles.CACHES[scene.session_uid]
    assert not _walkable_under(live_tiles, (7.0, 7.0))
    assert io.read_key(sidecar) == scene.voxnav.tile_cache_key == key
    # A stale cache (another bake's key) is refused the same way.
    scene.voxnav.tile_cache_key = "another bake"
    obstacles.CACHES.clear()
    assert obstacles.restore(scene) is None
    assert "is stale" in scene.voxnav.obstacle_status


def test_tiled_bake_steps_say_tile_k_of_n_and_closing_early_writes_nothing(bpy, ext):
    obstacles = _mod(ext, "obstacles")
    _scene(bpy, ext)
    scene = bpy.context.scene
    first = obstacles.CACHES[scene.session_uid]
    steps = ext.bake.tiled_bake_steps(bpy.context)
    for _ in range(3):
        fraction, text = next(steps)
        assert scene.voxnav.tile_progress == text
    assert text == "tile 3 of 25" and fraction == pytest.approx(3 / 25)
    steps.close()  # Esc in the modal operator
    assert scene.voxnav.tile_progress == ""
    assert obstacles.CACHES[scene.session_uid] is first
    outcome, seen = _drain(ext.bake.tiled_bake_steps(bpy.context))
    texts = [t for _, t in seen]
    assert texts == [f"tile {k} of 25" for k in range(1, len(texts) + 1)] and len(texts) >= 20
    assert outcome.counts["tiles"] == len(obstacles.CACHES[scene.session_uid].cache.tiles)
    _assert_same_tiles(_tiles_of(obstacles.CACHES[scene.session_uid]), _tiles_of(first))
    with pytest.raises(ext.errors.VoxNavError, match="Tile Size is 0"):
        scene.voxnav.tile_size = 0
        next(ext.bake.tiled_bake_steps(bpy.context))


@pytest.mark.parametrize("kind", ["PROCESSES", "THREADS"])
def test_tiles_in_worker_processes_or_threads_equal_the_serial_bake(bpy, ext, kind):
    obstacles = _mod(ext, "obstacles")
    parallel = _mod(ext, "parallel")
    _scene(bpy, ext)
    scene = bpy.context.scene
    serial = _tiles_of(obstacles.CACHES[scene.session_uid])
    python, why = parallel.worker_python()
    assert python is not None, why  # the bpy wheel: sys.executable is Python
    outcome, seen = _drain(ext.bake.tiled_bake_steps(bpy.context, workers=2, kind=kind))
    assert seen and not outcome.empty
    _assert_same_tiles(_tiles_of(obstacles.CACHES[scene.session_uid]), serial)


def test_worker_python_is_blenders_bundled_one_when_sys_executable_is_blender(
    bpy, ext, tmp_path, monkeypatch
):
    parallel = _mod(ext, "parallel")
    (tmp_path / "bin").mkdir()
    bundled = tmp_path / "bin" / "python3.11"
    bundled.write_text("#!/bin/sh\n")
    bundled.chmod(0o755)
    monkeypatch.setattr(parallel.sys, "executable", "/opt/blender/blender")
    monkeypatch.setattr(parallel.sys, "prefix", str(tmp_path))
    assert parallel.worker_python() == (str(bundled), f"Blender's bundled Python ({bundled})")
    bundled.unlink()
    python, why = parallel.worker_python()
    assert python is None and "no Python interpreter to start worker processes" in why
    executor, note = parallel.parallel_executor(2, "PROCESSES")
    assert executor is None and note.startswith("tiles baked one at a time")


def test_cli_bakes_tiled_with_tile_size_and_workers(bpy, ext, tmp_path, capsys):
    obstacles = _mod(ext, "obstacles")
    io = importlib.import_module(f"{ext.root.__name__}.core.tilecache_io")
    box(bpy, "Floor", (-12, -12, -0.5), (12, 12, 0))
    crate = box(bpy, "Crate", (-1, -1, 0), (1, 1, 2), location=(-7.0, -7.0, 0.0))
    crate.voxnav.dynamic_obstacle = True
    src = tmp_path / "src.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(src))
    out_blend, obj = tmp_path / "baked.blend", tmp_path / "navmesh.obj"
    argv = [str(src), "--tile-size", "16", "--workers", "2", "--obj", str(obj)]
    assert ext.cli.main([*argv, "--save-blend", str(out_blend)]) == 0
    printed = capsys.readouterr().out
    assert "tile 1 of 25" in printed and "2 worker processes" in printed
    assert "tiles of 16 cells" in printed and "1 obstacle(s)" in printed
    scene = bpy.context.scene
    cache = obstacles.CACHES[scene.session_uid].cache
    text = obj.read_text().splitlines()
    assert sum(line.startswith("o tile_") for line in text) == len(cache.tiles)
    assert sum(line.startswith("f ") for line in text) == cache.navmesh.poly_count
    sidecar = tmp_path / "baked.voxnav-tiles.Scene.npz"
    assert io.read_key(sidecar) == scene.voxnav.tile_cache_key
    assert not list(tmp_path.glob(".*"))  # no temp file left, none beside a temp name
    assert not (tmp_path / "src.voxnav-tiles.Scene.npz").exists()
    # Solo-only outputs with tiles: a usage error (exit 2) naming the flag, nothing written.
    npz = tmp_path / "voxels.npz"
    assert ext.cli.main([str(src), "--tile-size", "16", "--npz", str(npz)]) == 2
    assert "--npz with --tile-size 16" in capsys.readouterr().err and not npz.exists()
    assert ext.cli.main([str(src), "--tile-size", "4", "--obj", str(obj)]) == 2
    assert "--tile-size: tiles must be 8..4096 cells wide, got tile_size 4: use tile_size >= 8" in (
        capsys.readouterr().err
    )


def _modal_operator(ext, bpy, reports, ended):
    """The Build Navmesh operator's modal loop on a stand-in ``self`` (a real modal run needs
    a window and its event loop, which the wheel has not)."""
    from types import SimpleNamespace

    cls = ext.operators.VOXNAV_OT_build_navmesh
    fake = SimpleNamespace(
        _steps=ext.bake.tiled_bake_steps(bpy.context),
        STEP_SECONDS=0.0,  # one tile per timer event
        stop_after="navmesh",
        report=lambda kind, message: reports.append((set(kind), message)),
        _end_modal=lambda context: ended.append(True),
    )
    fake._finished = lambda context, outcome: cls._finished(fake, context, outcome)
    return cls, fake


def test_modal_build_navmesh_steps_a_tile_per_event_and_esc_cancels(bpy, ext):
    from types import SimpleNamespace

    obstacles = _mod(ext, "obstacles")
    _scene(bpy, ext)
    scene = bpy.context.scene
    first = obstacles.CACHES[scene.session_uid]
    timer, esc = SimpleNamespace(type="TIMER"), SimpleNamespace(type="ESC")
    reports, ended = [], []
    cls, op = _modal_operator(ext, bpy, reports, ended)
    assert cls.modal(op, bpy.context, SimpleNamespace(type="MOUSEMOVE")) == {"PASS_THROUGH"}
    assert cls.modal(op, bpy.context, timer) == {"RUNNING_MODAL"}
    assert cls.modal(op, bpy.context, timer) == {"RUNNING_MODAL"}
    assert scene.voxnav.tile_progress == "tile 2 of 25"
    assert cls.modal(op, bpy.context, esc) == {"CANCELLED"}
    assert ended and reports[-1] == ({"WARNING"}, "VoxNav: tiled bake cancelled, nothing changed")
    assert obstacles.CACHES[scene.session_uid] is first and scene.voxnav.tile_progress == ""
    reports, ended = [], []
    cls, op = _modal_operator(ext, bpy, reports, ended)
    events = 0
    while (state := cls.modal(op, bpy.context, timer)) == {"RUNNING_MODAL"}:
        events += 1
    assert state == {"FINISHED"} and ended and events >= 20
    assert reports[-1][0] == {"INFO"} and "Build Navmesh" in reports[-1][1]
    assert obstacles.CACHES[scene.session_uid] is not first
    _assert_same_tiles(_tiles_of(obstacles.CACHES[scene.session_uid]), _tiles_of(first))


def _small_and_large_tiled(bpy, scene) -> None:
    """Agent rows "small" (radius 0.3) and "large" (0.9), Tile Size 16."""
    for name, radius in (("small", 0.3), ("large", 0.9)):
        assert bpy.ops.voxnav.agent_add() == {"FINISHED"}
        row = scene.voxnav.agents[-1]
        row.name, row.radius = name, radius
    scene.voxnav.tile_size = 16


def test_agent_rows_tile_caches_are_saved_and_reopen_without_a_rebake(
    bpy, ext, tmp_path, monkeypatch
):
    """With agent rows every agent's tile cache is saved beside the .blend under its name;
    reopening loads them all and the crate moving rebuilds every agent's tiles, no rebake.
    A missing agent file loads none and says which agent."""
    obstacles = _mod(ext, "obstacles")
    box(bpy, "Floor", (-12, -12, -0.5), (12, 12, 0))
    crate = box(bpy, "Crate", (-1, -1, 0), (1, 1, 2), location=(-7.0, -7.0, 0.0))
    crate.voxnav.dynamic_obstacle = True
    scene = bpy.context.scene
    _small_and_large_tiled(bpy, scene)
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    baked = {n: _tiles_of(lt) for n, lt in obstacles.CACHES[scene.session_uid].agents.items()}
    blend = tmp_path / "level.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    for name in ("small", "large"):
        assert (tmp_path / f"level.voxnav-tiles.Scene@{name}.npz").is_file()
    # A file of an older VoxNav (SCENE.AGENT), without the user folder's copy: still loads.
    small_key = obstacles.CACHES[scene.session_uid].agents["small"].key
    os.replace(
        tmp_path / "level.voxnav-tiles.Scene@small.npz",
        tmp_path / "level.voxnav-tiles.Scene.small.npz",
    )
    os.remove(obstacles.user_cache_path(small_key))

    _no_rebake(ext, monkeypatch)
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    scene = bpy.context.scene
    live_tiles = obstacles.CACHES[scene.session_uid]
    assert list(live_tiles.agents) == ["small", "large"], scene.voxnav.obstacle_status
    for name, each in live_tiles.agents.items():
        _assert_same_tiles(_tiles_of(each), baked[name])
        assert len(each.obstacles) == 1
    counts = {n: lt.cache.rebuild_count for n, lt in live_tiles.agents.items()}
    bpy.data.objects["Crate"].location = (7.0, 7.0, 0.0)
    bpy.context.view_layer.update()
    for name, each in live_tiles.agents.items():
        assert each.cache.rebuild_count > counts[name]
        assert _walkable_under(each, (-7.0, -7.0)) and not _walkable_under(each, (7.0, 7.0))

    os.remove(tmp_path / "level.voxnav-tiles.Scene@large.npz")
    os.remove(obstacles.user_cache_path(live_tiles.agents["large"].key))
    bpy.ops.wm.read_homefile(use_empty=True)
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    scene = bpy.context.scene
    assert scene.session_uid not in obstacles.CACHES
    assert "agent 'large'" in scene.voxnav.obstacle_status


def test_a_removed_agent_rows_tile_cache_is_deleted_at_the_next_bake(bpy, ext, tmp_path):
    """Its file beside the .blend stayed for ever (nothing reads it again). Another scene's
    agent files, and a file of an older VoxNav, stay."""
    box(bpy, "Floor", (-12, -12, -0.5), (12, 12, 0))
    scene = bpy.context.scene
    _small_and_large_tiled(bpy, scene)
    blend = tmp_path / "level.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    files = {name: tmp_path / f"level.voxnav-tiles.Scene@{name}.npz" for name in ("small", "large")}
    assert all(path.is_file() for path in files.values())
    others = [
        tmp_path / "level.voxnav-tiles.Scene2@large.npz",
        tmp_path / "level.voxnav-tiles.Scene.large.npz",
    ]
    for path in others:
        path.write_bytes(files["large"].read_bytes())

    scene.voxnav.agents.remove(1)  # "large"
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert files["small"].is_file() and not files["large"].exists()
    assert all(path.is_file() for path in others)
    scene.voxnav.agents.clear()  # one navmesh: no agent's file is read again
    assert bpy.ops.voxnav.build_navmesh() == {"FINISHED"}
    assert not files["small"].exists() and (tmp_path / "level.voxnav-tiles.Scene.npz").is_file()


def test_scenes_whose_names_differ_in_other_characters_get_their_own_sidecars(bpy, ext, tmp_path):
    # "Level 1" and "Level_1" both wrote NAME.voxnav-tiles.Level_1.npz: the second tiled bake
    # overwrote the first's cache. Plain names keep their file name (saved files still load).
    obstacles = importlib.import_module(f"{ext.root.__name__}.voxnav_addon.obstacles")
    blend = str(tmp_path / "two.blend")
    first = bpy.context.scene
    first.name = "Level 1"
    second = bpy.data.scenes.new("Level_1")
    paths = {obstacles.sidecar_path(s, blend) for s in (first, second)}
    assert len(paths) == 2
    assert obstacles.sidecar_path(second, blend) == str(tmp_path / "two.voxnav-tiles.Level_1.npz")
    agents = {obstacles.sidecar_path(second, blend, a) for a in ("big one", "big_one")}
    assert len(agents) == 2
    # Scene "Level_1" with agent "001" and a scene named "Level_1.001" (Blender's name for a
    # copy) wrote one file: the later bake overwrote the other scene's cache.
    third = bpy.data.scenes.new("Level_1.001")
    assert obstacles.sidecar_path(second, blend, "001") != obstacles.sidecar_path(third, blend)
    assert obstacles.sidecar_path(second, blend, "001").endswith(".Level_1@001.npz")


def test_an_empty_rebake_of_a_cacheless_file_says_nothing_changed(bpy, ext, tmp_path):
    """The one-time rebake after reopening without a cache came out empty (settings changed
    since): the status said "rebaked all tiles (cache saved)" though nothing was baked and no
    obstacle was live."""
    obstacles = _mod(ext, "obstacles")
    _scene(bpy, ext)
    blend = tmp_path / "level.blend"
    bpy.ops.wm.save_as_mainfile(filepath=str(blend))
    os.remove(tmp_path / "level.voxnav-tiles.Scene.npz")
    os.remove(obstacles.user_cache_path(bpy.context.scene.voxnav.tile_cache_key))
    bpy.ops.wm.open_mainfile(filepath=str(blend))
    scene = bpy.context.scene
    scene.voxnav.agent_max_slope = 0.0  # a rebake now finds no walkable floor
    bpy.data.objects["Crate"].location = (7.0, 7.0, 0.0)
    bpy.context.view_layer.update()
    assert scene.session_uid not in obstacles.CACHES
    status = scene.voxnav.obstacle_status
    assert "rebaked all tiles" not in status and "the rebake made an empty navmesh" in status
