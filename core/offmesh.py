"""Off-mesh links: Detour's ``dtOffMeshConnection`` inputs, VoxNav's Z-up world frame.

A link joins two points of the navmesh that agents cannot walk between (a gap to jump, a ledge
to drop from, a ladder). It is given by hand (Blender "Nav Link" objects, ``--offmesh-link``)
or found automatically from a bake (`core.jumplinks`). Both produce one `OffMeshLinks` value;
`core.nav.navdata` turns it into Detour's off-mesh polygons and connections.

Fields follow RecastDemo's InputGeom off-mesh arrays (``offMeshConVerts``, ``Rads``, ``Dirs``,
``Areas``, ``Flags``, ``Id``) so a link set means the same thing in VoxNav and in Detour.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import limits
from .errors import VoxNavError

#: Detour's DT_OFFMESH_CON_BIDIR: the link may be taken from either end.
OFFMESH_BIDIRECTIONAL = 1
#: RecastDemo's SAMPLE_POLYAREA_JUMP and SAMPLE_POLYFLAGS_JUMP: the default area and flags of
#: a link, so RecastDemo-style filters (and VoxNav's default filter) accept it.
DEFAULT_LINK_AREA = 5
DEFAULT_LINK_FLAGS = 0x08


@dataclass(frozen=True)
class OffMeshLinks:
    """A set of off-mesh links, VoxNav's Z-up world frame.

    All arrays have one row per link; an empty set has zero rows.
    """

    #: float32 (n, 3) start point (x, y, z). [Units: wu]
    start: np.ndarray
    #: float32 (n, 3) end point (x, y, z). [Units: wu]
    end: np.ndarray
    #: float32 (n,) endpoint snap radius: an end connects to the navmesh polygon within this
    #: distance. [Units: wu] [Limit: > 0]
    radius: np.ndarray
    #: bool (n,) True: two-way (DT_OFFMESH_CON_BIDIR); False: start -> end only.
    bidirectional: np.ndarray
    #: uint8 (n,) Detour area id of the link. [Limit: 0..63]
    area: np.ndarray
    #: uint16 (n,) polygon flags of the link (query filters include/exclude on them).
    flags: np.ndarray
    #: uint32 (n,) user id stored in dtOffMeshConnection::userId.
    user_id: np.ndarray

    def __len__(self) -> int:
        return int(self.start.shape[0])

    @staticmethod
    def empty() -> OffMeshLinks:
        return OffMeshLinks.create(np.zeros((0, 3)), np.zeros((0, 3)), np.zeros(0))

    @staticmethod
    def create(
        start,
        end,
        radius,
        bidirectional=True,
        area=DEFAULT_LINK_AREA,
        flags=DEFAULT_LINK_FLAGS,
        user_id=None,
    ) -> OffMeshLinks:
        """Validated links from array-likes; scalars broadcast to every link.

        Raises `VoxNavError` naming the first bad link (non-finite point, radius <= 0, area
        outside 0..63, flags outside 0..65535).
        """
        start_arr = limits.xyz_rows(start, "off-mesh links: start points")
        end_arr = limits.xyz_rows(end, "off-mesh links: end points")
        count = start_arr.shape[0]
        if end_arr.shape[0] != count:
            raise VoxNavError(
                f"off-mesh links: {count} start points but {end_arr.shape[0]} end points; "
                "give one end point per start point"
            )
        radius_arr = _per_link(radius, count, "radius", "f")
        area_arr = _per_link(area, count, "area", "i")
        flags_arr = _per_link(flags, count, "flags", "i")
        bidir_arr = _per_link(bidirectional, count, "bidirectional", "b")
        ids = np.arange(count) if user_id is None else user_id
        id_arr = _per_link(ids, count, "user_id", "i")
        # Within +-`limits.MAX_COORDINATE`: finite in float32, where they are kept
        # (1e39 was infinite there, written as Infinity into JSON, which no parser reads).
        reach = limits.MAX_COORDINATE
        inside = limits.within_reach
        problems = [
            (
                ~inside(start_arr).all(axis=1),
                f"its start point is not a finite number within +-{reach:g}",
            ),
            (
                ~inside(end_arr).all(axis=1),
                f"its end point is not a finite number within +-{reach:g}",
            ),
            (
                ~(radius_arr > 0) | ~inside(radius_arr),
                f"its radius must be > 0 and <= {reach:g}",
            ),
            ((area_arr < 0) | (area_arr > 63), "its area must be 0..63"),
            ((flags_arr < 0) | (flags_arr > 0xFFFF), "its flags must be 0..65535"),
            ((id_arr < 0) | (id_arr > 0xFFFFFFFF), "its user id must be 0..4294967295"),
        ]
        for bad, why in problems:
            if bad.any():
                first = int(np.flatnonzero(bad)[0])
                raise VoxNavError(f"off-mesh link {first}: {why}; fix or remove that link")
        return OffMeshLinks(
            start=start_arr.astype(np.float32),
            end=end_arr.astype(np.float32),
            radius=radius_arr.astype(np.float32),
            bidirectional=bidir_arr.copy(),
            area=area_arr.astype(np.uint8),
            flags=flags_arr.astype(np.uint16),
            user_id=id_arr.astype(np.uint32),
        )

    def subset(self, keep: np.ndarray) -> OffMeshLinks:
        """The links where ``keep`` (bool (n,) or indices) selects them, in order."""
        return OffMeshLinks(
            *(
                getattr(self, name)[keep]
                for name in ("start", "end", "radius", "bidirectional", "area", "flags", "user_id")
            )
        )

    def concatenate(self, other: OffMeshLinks) -> OffMeshLinks:
        """This set followed by `other` (hand links first, then automatic ones, say)."""
        return OffMeshLinks(
            *(
                np.concatenate([getattr(self, name), getattr(other, name)])
                for name in ("start", "end", "radius", "bidirectional", "area", "flags", "user_id")
            )
        )


def parse_link_spec(text: str, user_id: int = 0, recast_frame: bool = False) -> OffMeshLinks:
    """One link from the command line's ``X,Y,Z:X,Y,Z[:KEY=VALUE,...]``: start, end, then
    optional ``radius=`` (wu, default 0.6), ``oneway`` (default two-way), ``area=`` (0..63,
    default 5), ``flags=`` (0..65535, default 0x08; 0x.. hex accepted). ``recast_frame``: the
    points are in RecastDemo's Y-up frame (x, up, z) and are swapped to VoxNav's Z-up.

    Raises `VoxNavError` with the part that could not be read.
    """
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise VoxNavError(
            f"off-mesh link {text!r}: expected START:END[:OPTIONS], e.g. "
            "1,2,0:4,2,0:radius=0.5,oneway"
        )
    points = []
    for name, part in zip(("start", "end"), parts[:2], strict=True):
        try:
            values = [float(v) for v in part.split(",")]
        except ValueError:
            values = []
        if len(values) != 3:
            raise VoxNavError(f"off-mesh link {text!r}: its {name} {part!r} is not X,Y,Z")
        points.append([values[0], values[2], values[1]] if recast_frame else values)
    radius, bidirectional, area, flags = 0.6, True, DEFAULT_LINK_AREA, DEFAULT_LINK_FLAGS
    for option in parts[2].split(",") if len(parts) == 3 and parts[2] else []:
        key, _, value = option.strip().partition("=")
        if key == "oneway" and not value:
            bidirectional = False
            continue
        if key not in ("radius", "area", "flags") or not value:
            raise VoxNavError(
                f"off-mesh link {text!r}: unknown option {option!r}; use radius=, oneway, "
                "area=, flags="
            )
        try:
            if key == "radius":
                radius = float(value)
            elif key == "area":
                area = int(value, 0)
            else:
                flags = int(value, 0)
        except ValueError:
            raise VoxNavError(f"off-mesh link {text!r}: {option!r} is not a number") from None
    try:
        return OffMeshLinks.create(
            [points[0]], [points[1]], radius, bidirectional, area, flags, [user_id]
        )
    except VoxNavError as exc:
        reason = str(exc).split(": ", 1)[-1]
        raise VoxNavError(f"off-mesh link {text!r}: {reason}") from None


def links_from_specs(specs, recast_frame: bool = False) -> OffMeshLinks | None:
    """`parse_link_spec` for each command-line spec (user ids 0, 1, ...); None when none."""
    if not specs:
        return None
    links = OffMeshLinks.empty()
    for i, spec in enumerate(specs):
        links = links.concatenate(parse_link_spec(spec, i, recast_frame))
    return links


def unplaced_links(links: OffMeshLinks | None, tiles) -> str | None:
    """A warning naming the links no Detour tile of ``tiles`` (`NavMeshData`) stores, or None.

    Detour keeps a link only in the tile holding its start, and only when the start lies
    within the tile's bounds and within the agent's climb of its surface
    (``dtCreateNavMeshData``); a link starting anywhere else is silently left out of the
    navmesh. Links are matched by user id.
    """
    if links is None or len(links) == 0:
        return None
    stored = np.concatenate([np.zeros(0, np.uint32), *(t.off_mesh_user_id for t in tiles)])
    missing = np.flatnonzero(~np.isin(links.user_id, stored))
    if missing.size == 0:
        return None
    shown = "; ".join(
        "link {} starting at ({})".format(
            int(i), ", ".join(f"{v:g}" for v in links.start[i].tolist())
        )
        for i in missing[:3].tolist()
    )
    more = f" and {missing.size - 3} more" if missing.size > 3 else ""
    return (
        f"{missing.size} of {len(links)} off-mesh link(s) start off the navmesh ({shown}{more}): "
        "Detour keeps a link only in the tile holding its start, within the agent's climb of "
        "that tile's surface; these are left out of the navmesh (its Detour data, the .bin and "
        "queries; a .json or .obj lists the links as given). Move their start onto a walkable "
        "floor"
    )


def link_warnings(links: OffMeshLinks | None, navmesh) -> list[str]:
    """The warnings for hand-made ``links`` Detour leaves out of the navmesh (`unplaced_links`)
    or cannot end anywhere (`unlanded_links`). ``navmesh``: a callable making the
    `core.nav.navmesh.NavMesh` with those links (its tiles are the Detour data), called only
    when there are links."""
    if links is None or len(links) == 0:
        return []
    nav = navmesh()
    return [w for w in (unplaced_links(links, nav.tiles), unlanded_links(links, nav)) if w]


def unlanded_links(links: OffMeshLinks | None, nav) -> str | None:
    """A warning naming the links of ``links`` that `core.nav.navmesh.NavMesh` ``nav`` stores
    and joins at their start but whose end joins no polygon, or None: Detour joins an end to
    the nearest polygon within the link's radius, only in its start's tile and the 8 around
    it; such a link leads nowhere and no path takes it. Links are matched by user id."""
    if links is None or len(links) == 0:
        return None
    ids, start_ok, end_ok = nav.off_mesh_landings()
    lost = set(ids[start_ok & ~end_ok].tolist())
    missing = np.flatnonzero(np.isin(links.user_id, list(lost))) if lost else np.zeros(0, int)
    if missing.size == 0:
        return None
    shown = "; ".join(
        "link {} ending at ({})".format(int(i), ", ".join(f"{v:g}" for v in links.end[i].tolist()))
        for i in missing[:3].tolist()
    )
    more = f" and {missing.size - 3} more" if missing.size > 3 else ""
    tiles = (
        f"; with tiles, an end must lie in its start's tile or the next one (tiles are "
        f"{nav.params.tile_width:g} wu wide): raise tile_size or shorten the link"
        if len(nav.tiles) > 1
        else ""
    )
    return (
        f"{missing.size} of {len(links)} off-mesh link(s) end off the navmesh ({shown}{more}): "
        "Detour joins a link's end to the nearest polygon within its radius, and these join "
        f"none, so no path takes them. Move their end onto a walkable floor{tiles}"
    )


def _per_link(value, count: int, name: str, kind: str) -> np.ndarray:
    """One value per link from a scalar (every link) or ``count`` values, of ``kind`` "f"
    (float64), "i" (int64: whole numbers; 5.7 was cut to 5) or "b" (bool: True/False or 1/0;
    the text "no" read as True); `VoxNavError` naming ``name`` otherwise."""
    arr = np.asarray(value)
    wanted = {"f": "numbers", "i": "whole numbers", "b": "True or False"}[kind]
    if arr.ndim > 1 or (arr.ndim == 1 and arr.shape[0] != count):
        raise VoxNavError(
            f"off-mesh links: {name} must be one value or one per link ({count}), got "
            f"shape {arr.shape}"
        )
    if kind == "b":
        ok = arr.dtype.kind == "b" or (arr.dtype.kind in "iu" and bool(np.isin(arr, (0, 1)).all()))
    elif arr.dtype.kind in "iub":
        ok = True
    elif arr.dtype.kind == "f":
        ok = kind == "f" or bool((np.isfinite(arr) & (arr == np.round(arr))).all())
    else:
        ok = False
    if not ok:
        raise VoxNavError(f"off-mesh links: {name} must be {wanted}, got {value!r}")
    dtype = {"f": np.float64, "i": np.int64, "b": bool}[kind]
    return np.broadcast_to(arr.astype(dtype), (count,))
