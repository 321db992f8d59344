"""Build, install and run the VoxNav extension in the bpy wheel (headless Blender as a module).

Used by ``.ci/run``, by the Blender tests' conftest and by hand::

    python tests/blender/harness.py validate
    python tests/blender/harness.py build [--out dist]
    python tests/blender/harness.py demo [--out demo_out]
    python tests/blender/harness.py cli -- level.blend --obj navmesh.obj --png preview.png

Everything goes through the zip Blender's own extension tool builds and
``extensions.package_install_files`` installs: the source tree is never imported. The extension
tool is located without importing bpy (it is a plain script inside the wheel), and bpy is
imported only after ``BLENDER_USER_RESOURCES`` points at a scratch folder, so nothing touches the
user's own Blender configuration. The scratch folders the harness makes (``voxnav_user_*``,
``voxnav_dist_*`` in the temp directory) are removed again when it is done or the process ends.

``demo`` and ``cli`` drop the ``EGL_BAD_MATCH`` lines the wheel's software GL prints on stderr
for every render (the picture is fine); all other output passes through unchanged.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import importlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODULE = "bl_ext.user_default.voxnav"


class HarnessError(RuntimeError):
    """The extension could not be validated, built or installed; the message says why."""


def bpy_scripts_dir() -> Path:
    """The wheel's ``scripts`` folder (found without importing bpy)."""
    spec = importlib.util.find_spec("bpy")
    if spec is None or not spec.submodule_search_locations:
        raise HarnessError(
            "the bpy wheel is not installed in this Python "
            f"({sys.executable}); run `bash .ci/run`, or use one of the .venvs/bpy-* it makes"
        )
    root = Path(next(iter(spec.submodule_search_locations)))
    found = sorted(root.glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
    if not found:
        raise HarnessError(f"Blender's extension tool blender_ext.py not found under {root}")
    return found[-1].parents[3]


def _ext_command(*args: str) -> subprocess.CompletedProcess:
    scripts = bpy_scripts_dir()
    tool = scripts / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"
    tags = scripts / "modules" / "_bpy_internal" / "extensions" / "tags.py"
    cmd = [sys.executable, str(tool), args[0], "--valid-tags", str(tags), *args[1:]]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)


def validate(repo: Path = REPO) -> str:
    """Validate the manifest with Blender's tool; return its output (HarnessError if invalid)."""
    proc = _ext_command("validate", str(repo))
    if proc.returncode != 0:
        raise HarnessError(f"manifest validation failed:\n{proc.stdout}{proc.stderr}")
    return proc.stdout


def build_zip(out_dir: Path | str, repo: Path = REPO) -> Path:
    """Build ``voxnav-<version>.zip`` into ``out_dir`` with Blender's tool; return its path."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    validate(repo)
    proc = _ext_command("build", "--source-dir", str(repo), "--output-dir", str(out_dir))
    if proc.returncode != 0:
        raise HarnessError(f"extension build failed:\n{proc.stdout}{proc.stderr}")
    zips = sorted(out_dir.glob("voxnav-*.zip"), key=lambda p: p.stat().st_mtime)
    if not zips:
        raise HarnessError(f"the build wrote no voxnav-*.zip into {out_dir}:\n{proc.stdout}")
    return zips[-1]


def install_extension(zip_path: Path | str):
    """Install and enable the zip in this process's bpy; return the extension's module.

    Sets ``BLENDER_USER_RESOURCES`` to a scratch folder first when bpy is not imported yet.
    Installing again (same process) replaces the previous copy.
    """
    if "bpy" not in sys.modules and "BLENDER_USER_RESOURCES" not in os.environ:
        user_dir = tempfile.mkdtemp(prefix="voxnav_user_")
        # Registered before bpy is imported, so it runs after bpy's own exit handlers.
        atexit.register(shutil.rmtree, user_dir, ignore_errors=True)
        os.environ["BLENDER_USER_RESOURCES"] = user_dir
    import bpy

    result = bpy.ops.extensions.package_install_files(
        filepath=str(Path(zip_path).resolve()),
        repo="user_default",
        enable_on_install=True,
        overwrite=True,
    )
    if "FINISHED" not in result or MODULE not in bpy.context.preferences.addons:
        raise HarnessError(f"installing {zip_path} did not enable {MODULE} ({result})")
    bpy.ops.wm.read_homefile(use_empty=True)
    return importlib.import_module(MODULE)


def cli_module(ext):
    return importlib.import_module(f"{ext.__name__}.voxnav_addon.cli")


def run_cli(argv: list[str], zip_path: Path | str | None = None, ext=None) -> int:
    """Run the ``voxnav`` batch command; exit code. Uses the installed extension ``ext`` if
    given, else installs ``zip_path`` (built first when not given)."""
    if ext is None:
        if zip_path is None:
            # Installing copies the zip's contents: the zip itself is not needed afterwards.
            with tempfile.TemporaryDirectory(prefix="voxnav_dist_") as dist:
                ext = install_extension(build_zip(dist))
        else:
            ext = install_extension(zip_path)
    return int(cli_module(ext).main(argv))


#: Lines the bpy wheel's software GL prints on stderr at every render, though the picture is
#: right (headless, no display to match an EGL config against).
STDERR_NOISE = (re.compile(rb"^EGL Error \(0x[0-9A-Fa-f]+\): EGL_BAD_MATCH\b"),)


@contextlib.contextmanager
def filtered_stderr(noise=STDERR_NOISE) -> Iterator[list[int]]:
    """Drop the lines matching ``noise`` that anything (C code included) writes to file
    descriptor 2 inside the block; everything else passes through unchanged, line by line.
    Yields a one-item list that ends up holding the number of lines dropped."""
    sys.stderr.flush()
    original = os.dup(2)
    read_end, write_end = os.pipe()
    os.dup2(write_end, 2)
    os.close(write_end)
    dropped = [0]

    def pump() -> None:
        with os.fdopen(read_end, "rb") as pipe:
            for line in pipe:
                if any(pattern.match(line) for pattern in noise):
                    dropped[0] += 1
                else:
                    os.write(original, line)

    thread = threading.Thread(target=pump, name="stderr-filter", daemon=True)
    thread.start()
    try:
        yield dropped
    finally:
        sys.stderr.flush()
        os.dup2(original, 2)  # closes the pipe's last write end: the pump sees end of file
        thread.join(timeout=10)
        os.close(original)


#: The demo's test path (voxnav_addon/demo.py PATH_START -> PATH_GOAL): from the ground floor
#: up the west stairs onto the west platform.
DEMO_PATH = "1,-2,0:-10,4,3"


def demo_outputs(out_dir: Path | str) -> dict[str, Path]:
    out = Path(out_dir).resolve()
    return {
        "save-blend": out / "voxnav_demo.blend",
        "obj": out / "voxnav_demo_navmesh.obj",
        "json": out / "voxnav_demo_navmesh.json",
        "npz": out / "voxnav_demo_voxels.npz",
        "png": out / "voxnav_demo.png",
    }


def run_demo(
    out_dir: Path | str = REPO / "demo_out",
    zip_path: Path | str | None = None,
    ext=None,
    resolution: str = "1280x720",
) -> int:
    """Bake the procedural demo level into ``out_dir`` (.blend, navmesh .obj, voxels .npz, PNG)."""
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    argv = ["--demo", "--resolution", resolution, "--path", DEMO_PATH]
    for flag, path in demo_outputs(out_dir).items():
        argv += [f"--{flag}", str(path)]
    return run_cli(argv, zip_path, ext)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("validate", help="validate blender_manifest.toml")
    p_build = sub.add_parser("build", help="build the extension zip")
    p_build.add_argument("--out", default=str(REPO / "dist"))
    p_demo = sub.add_parser("demo", help="build, install, bake the demo into demo_out/")
    p_demo.add_argument("--out", default=str(REPO / "demo_out"))
    p_demo.add_argument("--zip", default=None, help="an already built zip")
    p_demo.add_argument("--resolution", default="1280x720", help="picture size WxH")
    p_cli = sub.add_parser("cli", help="build, install, run the voxnav command with ARGS")
    p_cli.add_argument("--zip", default=None, help="an already built zip")
    p_cli.add_argument("args", nargs=argparse.REMAINDER)
    ns = parser.parse_args(argv)
    try:
        if ns.command == "validate":
            print(validate().strip())
            return 0
        if ns.command == "build":
            print(build_zip(ns.out))
            return 0
        with filtered_stderr():
            if ns.command == "demo":
                return run_demo(ns.out, ns.zip, resolution=ns.resolution)
            args = ns.args[1:] if ns.args[:1] == ["--"] else ns.args
            return run_cli(args, ns.zip)
    except HarnessError as exc:
        print(f"harness: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
