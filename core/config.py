"""NavConfig: the user's settings in world units, and the voxel-unit integers Recast derives.

Every setting carries Recast/RecastDemo's name (snake_case), default, units and limits. The
derived integers are computed in float32 in the same operation order as RecastDemo's
``Sample_SoloMesh::build`` so they match Recast bit for bit (in float64, floor(0.9/0.1) is 8
where Recast gets 9).
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, fields

import numpy as np

from .errors import VoxNavError

F32 = np.float32

#: Area id of a blocked (non-walkable) span or triangle. [Recast: RC_NULL_AREA]
NULL_AREA = 0
#: Area id of a walkable span or triangle. [Recast: RC_WALKABLE_AREA]
WALKABLE_AREA = 63
#: Largest span height Recast can store. [Units: ch] [Recast: RC_SPAN_MAX_HEIGHT]
SPAN_MAX_HEIGHT = 8191
#: Refuse grids whose estimated working memory exceeds this many bytes unless told otherwise.
DEFAULT_MEMORY_LIMIT = 4 * 1024**3

PARTITIONS = ("watershed", "monotone", "layers")


KIB = 1024
MIB = 1024**2
GIB = 1024**3
#: Size suffixes accepted by `parse_size` (case-insensitive): all binary (powers of 1024), so
#: "4G", "4GB" and "4GiB" all mean 4 * 1024**3 bytes, as most tools read them.
_SIZE_UNITS = {
    "": 1, "b": 1,
    "k": KIB, "kb": KIB, "kib": KIB,
    "m": MIB, "mb": MIB, "mib": MIB,
    "g": GIB, "gb": GIB, "gib": GIB,
    "t": 1024**4, "tb": 1024**4, "tib": 1024**4,
    "p": 1024**5, "pb": 1024**5, "pib": 1024**5,  # the limit's own unit (1 PiB)
}  # fmt: skip
_TRUE = ("1", "true", "on", "yes")
_FALSE = ("0", "false", "off", "no")


def parse_size(value: object, name: str = "memory_limit") -> int:
    """Bytes from an int or a text such as ``4GB``, ``512MiB``, ``4G``, ``1.5 GiB`` or ``123``.

    Suffixes K, M, G, T (optionally followed by B or iB) are powers of 1024. Raises
    `VoxNavError` naming ``name`` for anything else.
    """
    if isinstance(value, bool):
        raise VoxNavError(f"{name} must be a size such as 4GB, 512MiB or a number of bytes")
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and value == int(value):
        return int(value)
    text = str(value).strip().lower().replace(" ", "").replace("_", "")
    number = text.rstrip("abcdefghijklmnopqrstuvwxyz")
    unit = text[len(number) :]
    try:
        amount = float(number)
    except ValueError:
        amount = math.nan
    if unit not in _SIZE_UNITS or not math.isfinite(amount):
        raise VoxNavError(
            f"{name} must be a size such as 4GB, 512MiB, 4G or a number of bytes, got {value!r}"
        )
    return int(round(amount * _SIZE_UNITS[unit]))


def format_size(nbytes: int) -> str:
    """``4294967296`` -> ``"4 GiB"``: the largest binary unit, up to 3 significant decimals."""
    units = (("PiB", 1024**5), ("TiB", 1024**4), ("GiB", GIB), ("MiB", MIB), ("KiB", KIB))
    for unit, size in units:
        if abs(nbytes) >= size:
            return f"{nbytes / size:.4g} {unit}"
    return f"{int(nbytes)} bytes"


def parse_bool(value: object, name: str) -> bool:
    """True/False from a bool, 0/1 or on/off, true/false, yes/no text; else `VoxNavError`."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and int(value) in (0, 1):
        return bool(value)
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise VoxNavError(f"{name} must be on or off (true/false, yes/no, 1/0), got {value!r}")


@dataclass(frozen=True)
class SettingDoc:
    """The documentation and working range of one NavConfig setting: the one source of the
    README's settings table, both command lines' ``--help`` and the Blender panel's tooltips.

    ``lo``/``hi`` bound numeric settings (inclusive unless ``lo_open``/``hi_open``); the check
    is made on the value as the core uses it (float32 for the float settings), so a value that
    is finite in float64 but 0 or infinite in float32 is refused.
    """

    label: str
    meaning: str
    unit: str = ""
    lo: float | None = None
    hi: float | None = None
    lo_open: bool = False
    hi_open: bool = False
    #: Recast's name of the setting (rcConfig field or RecastDemo variable).
    recast: str = ""
    #: Free-text limits for settings that are not a number range.
    limits_text: str = ""
    #: How the unit is shown in the docs when it needs more words than ``unit``.
    unit_text: str = ""

    def unit_shown(self) -> str:
        return self.unit_text or self.unit

    def limits(self) -> str:
        """The working range as text, e.g. ``0.001 to 1000`` or ``0 to 90 (90 excluded)``."""
        if self.limits_text:
            return self.limits_text
        if self.lo is None and self.hi is None:
            return ""
        lo = _fmt(self.lo) if self.lo is not None else "-inf"
        hi = _fmt(self.hi) if self.hi is not None else "inf"
        text = f"{lo} to {hi}"
        excluded = [_fmt(v) for v, o in ((self.lo, self.lo_open), (self.hi, self.hi_open)) if o]
        if excluded:
            text += f" ({' and '.join(str(v) for v in excluded)} excluded)"
        return text


def _fmt(value: float | None) -> str:
    if value is None:
        return ""
    if isinstance(value, int) or float(value) == int(value):
        if abs(value) >= 2**20 and int(value) % MIB == 0:
            return format_size(int(value))
        return str(int(value))
    return f"{value:g}"


def _setting(default, **doc):
    return field(default=default, metadata={"doc": SettingDoc(**doc)})


#: Longest length setting. [Units: wu] Keeps every derived voxel count finite in float32.
MAX_LENGTH = 1e5
#: Smallest and largest voxel size. [Units: wu]
MIN_CELL = 0.001
MAX_CELL = 1000.0


@dataclass
class NavConfig:
    """User settings for one bake, in world units (metres in Blender).

    Defaults are RecastDemo's. Each field's ``metadata["doc"]`` (`SettingDoc`, read with
    `NavConfig.doc`) holds its meaning, unit and working range. The constructor normalises text
    and sizes (``memory_limit="4GB"``, ``filter_ledge_spans="off"``, ``cell_size="0.2"``);
    ``validate()`` raises `VoxNavError` naming the setting and its working range; ``derived()``
    gives Recast's voxel-unit integers.
    """

    cell_size: float = _setting(
        0.3, label="Cell Size", unit="wu", lo=MIN_CELL, hi=MAX_CELL, recast="cs",
        meaning="Horizontal voxel size. Smaller is more precise and slower (memory grows with "
        "1 / cell_size squared)",
    )  # fmt: skip
    cell_height: float = _setting(
        0.2, label="Cell Height", unit="wu", lo=MIN_CELL, hi=MAX_CELL, recast="ch",
        meaning="Vertical voxel size",
    )  # fmt: skip
    agent_height: float = _setting(
        2.0, label="Height", unit="wu", lo=0.0, lo_open=True, hi=MAX_LENGTH,
        recast="walkableHeight",
        meaning="Height of the agent: spans with less free space above are not walkable "
        "(at least 3 cell heights)",
    )  # fmt: skip
    agent_radius: float = _setting(
        0.6, label="Radius", unit="wu", lo=0.0, hi=MAX_LENGTH, recast="walkableRadius",
        meaning="Radius of the agent: the walkable area is eroded away from walls by this much",
    )  # fmt: skip
    agent_max_climb: float = _setting(
        0.9, label="Max Climb", unit="wu", lo=0.0, hi=MAX_LENGTH, recast="walkableClimb",
        meaning="Highest ledge or step the agent can climb",
    )  # fmt: skip
    agent_max_slope: float = _setting(
        45.0, label="Max Slope", unit="degrees", lo=0.0, hi=90.0, hi_open=True,
        recast="walkableSlopeAngle",
        meaning="Steepest walkable slope; only up-facing triangles are walkable",
    )  # fmt: skip
    region_min_size: float = _setting(
        8.0, label="Min Region Size", unit="cells", lo=0.0, hi=1e4, recast="minRegionArea",
        meaning="Regions smaller than this side length squared are removed",
    )  # fmt: skip
    region_merge_size: float = _setting(
        20.0, label="Merged Region Size", unit="cells", lo=0.0, hi=1e4,
        recast="mergeRegionArea",
        meaning="Regions smaller than this side length squared merge into a neighbour",
    )  # fmt: skip
    edge_max_len: float = _setting(
        12.0, label="Max Edge Length", unit="wu", lo=0.0, hi=MAX_LENGTH, recast="maxEdgeLen",
        meaning="Longest contour edge along a wall; 0 = no limit",
    )  # fmt: skip
    edge_max_error: float = _setting(
        1.3, label="Max Edge Error", unit="wu", lo=0.0, hi=MAX_LENGTH,
        recast="maxSimplificationError",
        meaning="Largest distance a simplified contour may stray from the voxel outline",
    )  # fmt: skip
    verts_per_poly: int = _setting(
        6, label="Verts Per Poly", lo=3, hi=6, recast="maxVertsPerPoly",
        meaning="Most vertices in one navmesh polygon (a whole number)",
    )  # fmt: skip
    detail_sample_dist: float = _setting(
        6.0, label="Sample Distance", unit="cells", lo=0.0, hi=1e4, recast="detailSampleDist",
        meaning="Detail mesh sample spacing; below 0.9 the detail mesh only follows the "
        "polygons",
    )  # fmt: skip
    detail_sample_max_error: float = _setting(
        1.0, label="Max Sample Error", unit="cell heights", lo=0.0, hi=1e4,
        recast="detailSampleMaxError",
        meaning="Largest height error of the detail mesh",
    )  # fmt: skip
    partition: str = _setting(
        "watershed", label="Partitioning", recast="partitionType",
        limits_text=" | ".join(PARTITIONS),
        meaning="Region partitioning: watershed (best regions, RecastDemo's default), monotone "
        "(fastest, long thin polygons) or layers (non-overlapping, for tiles)",
    )  # fmt: skip
    filter_low_hanging_obstacles: bool = _setting(
        True, label="Low Hanging Obstacles", recast="filterLowHangingObstacles",
        limits_text="on | off",
        meaning="A blocked span just above a walkable one (within climb) becomes walkable: "
        "curbs, steps",
    )  # fmt: skip
    filter_ledge_spans: bool = _setting(
        True, label="Ledge Spans", recast="filterLedgeSpans", limits_text="on | off",
        meaning="Spans next to a drop higher than the climb are not walkable",
    )  # fmt: skip
    filter_walkable_low_height_spans: bool = _setting(
        True, label="Walkable Low Height Spans", recast="filterWalkableLowHeightSpans",
        limits_text="on | off",
        meaning="Spans with less than agent height of free space above are not walkable",
    )  # fmt: skip
    bounds_min: tuple[float, float, float] | None = _setting(
        None, label="Bounds Min", recast="bmin", unit="wu",
        limits_text="x, y, z; both bounds or neither",
        meaning="Build volume's lower corner (Z-up); unset = the geometry's bounds",
    )  # fmt: skip
    bounds_max: tuple[float, float, float] | None = _setting(
        None, label="Bounds Max", recast="bmax", unit="wu",
        limits_text="x, y, z; greater than bounds_min",
        meaning="Build volume's upper corner (Z-up); unset = the geometry's bounds",
    )  # fmt: skip
    memory_limit: int = _setting(
        DEFAULT_MEMORY_LIMIT, label="Memory Limit", unit="bytes", lo=MIB, hi=1024**5,
        unit_text="bytes, or a size: 4GB, 512MiB, 4G (powers of 1024)",
        meaning="Refuse a grid whose estimated working memory exceeds this (checked before "
        "anything large is allocated)",
    )  # fmt: skip

    auto_links: bool = _setting(
        False, label="Auto Links", limits_text="on | off",
        meaning="Find jump and drop off-mesh links automatically from the navmesh's boundary "
        "edges (core.jumplinks): drop down a ledge to ground at most max_drop below, jump "
        "across a gap to ground within climb, each arc checked for clearance",
    )  # fmt: skip
    max_drop: float = _setting(
        3.0, label="Max Drop", unit="wu", lo=0.0, hi=MAX_LENGTH,
        meaning="Auto links: deepest drop off a ledge (one-way link down; never up)",
    )  # fmt: skip
    max_jump_distance: float = _setting(
        3.5, label="Max Jump Distance", unit="wu", lo=0.0, hi=MAX_LENGTH,
        meaning="Auto links: longest horizontal reach of a jump or drop, from navmesh edge to "
        "landing; the navmesh ends agent_radius from an edge, so a gap of g between floors "
        "needs about g + 2 * agent_radius",
    )  # fmt: skip
    link_spacing: float = _setting(
        1.0, label="Link Spacing", unit="wu", lo=0.0, lo_open=True, hi=MAX_LENGTH,
        meaning="Auto links: distance between links along an edge (one link per edge shorter "
        "than this); at most 2,097,152 samples along the edges of a bake or tile",
    )  # fmt: skip

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value is not None:
                setattr(self, f.name, _normalise(f.name, value))

    # ------------------------------------------------------------------
    @classmethod
    def field_names(cls) -> list[str]:
        return [f.name for f in fields(cls)]

    @classmethod
    def doc(cls, name: str) -> SettingDoc:
        """The `SettingDoc` of setting ``name`` (KeyError for an unknown name)."""
        for f in fields(cls):
            if f.name == name:
                return f.metadata["doc"]
        raise KeyError(name)

    @classmethod
    def default(cls, name: str):
        for f in fields(cls):
            if f.name == name:
                return f.default
        raise KeyError(name)

    @classmethod
    def parse(cls, name: str, text: str):
        """The value of setting ``name`` from command-line text (``--set name=text``).

        Floats and ints as numbers, bools as on/off, ``memory_limit`` as a size (``4GB``),
        bounds as ``x,y,z`` (or ``none``); raises `VoxNavError` naming the setting.
        """
        if name not in cls.field_names():
            raise VoxNavError(f"unknown setting {name!r}{did_you_mean(name, cls.field_names())}")
        text = text.strip()
        if name in ("bounds_min", "bounds_max"):
            if text.lower() in ("", "none"):
                return None
            parts = [p for p in text.replace(",", " ").split() if p]
            try:
                values = tuple(float(p) for p in parts)
            except ValueError:
                values = ()
            if len(values) != 3:
                raise VoxNavError(f"{name} must be three numbers x,y,z, got {text!r}")
            return values
        return _normalise(name, text, strict=True)

    def as_dict(self) -> dict:
        return asdict(self)

    def replace(self, **changes) -> NavConfig:
        unknown = sorted(set(changes) - set(self.field_names()))
        if unknown:
            hints = "".join(did_you_mean(u, self.field_names()) for u in unknown[:1])
            raise VoxNavError(
                f"unknown setting(s) {', '.join(unknown)}{hints}; known settings: "
                f"{', '.join(self.field_names())}"
            )
        data = self.as_dict()
        data.update(changes)
        return NavConfig(**data)

    def validate(self, *, agent_height: bool = True) -> NavConfig:
        """Check every setting; raise `VoxNavError` naming the first bad one. Returns self.

        Every number is checked in the precision the core uses it in (float32 for the float
        settings) against its working range (`SettingDoc.limits`). ``agent_height=False``
        leaves out the one check across settings, agent_height against 3 cell heights: for
        the base of several agents (`core.agents`), where each agent's own config is checked
        whole (an agent with its own height never uses the base's).
        """
        for f in fields(self):
            doc: SettingDoc = f.metadata["doc"]
            if doc.lo is None and doc.hi is None:
                continue
            _check_range(f.name, getattr(self, f.name), doc, f.type == "int" or f.type is int)
        if self.partition not in PARTITIONS:
            raise VoxNavError(
                f"partition must be one of {', '.join(PARTITIONS)}, got {self.partition!r}"
                f"{did_you_mean(str(self.partition), PARTITIONS)}"
            )
        for name in (
            "filter_low_hanging_obstacles",
            "filter_ledge_spans",
            "filter_walkable_low_height_spans",
            "auto_links",
        ):
            if not isinstance(getattr(self, name), bool):
                raise VoxNavError(f"{name} must be on or off, got {getattr(self, name)!r}")
        if (self.bounds_min is None) != (self.bounds_max is None):
            raise VoxNavError("give both bounds_min and bounds_max, or neither")
        if self.bounds_min is not None:
            try:
                lo = np.asarray(self.bounds_min, dtype=np.float64)
                hi = np.asarray(self.bounds_max, dtype=np.float64)
            except (TypeError, ValueError):
                raise VoxNavError("bounds_min and bounds_max must each be three numbers") from None
            if lo.shape != (3,) or hi.shape != (3,):
                raise VoxNavError("bounds_min and bounds_max must each be three numbers (x, y, z)")
            if not (np.isfinite(lo.astype(F32)).all() and np.isfinite(hi.astype(F32)).all()):
                raise VoxNavError("bounds_min and bounds_max must be finite (in float32)")
            if not (hi.astype(F32) > lo.astype(F32)).all():
                raise VoxNavError(
                    f"bounds_max ({', '.join(f'{x:g}' for x in hi.tolist())}) must be greater "
                    f"than bounds_min ({', '.join(f'{x:g}' for x in lo.tolist())}) on every axis"
                )
        derived = self.derived()
        if agent_height and derived.walkable_height < 3:
            raise VoxNavError(
                f"agent_height {self.agent_height} is less than 3 cell heights "
                f"({3 * self.cell_height:g}); raise agent_height or lower cell_height"
            )
        return self

    def derived(self) -> DerivedConfig:
        """Recast's rcConfig integers, computed in float32 as RecastDemo does."""
        cs, ch = F32(self.cell_size), F32(self.cell_height)
        detail_dist = F32(self.detail_sample_dist)
        return DerivedConfig(
            cs=cs,
            ch=ch,
            walkable_slope_angle=F32(self.agent_max_slope),
            walkable_height=int(np.ceil(F32(self.agent_height) / ch)),
            walkable_climb=int(np.floor(F32(self.agent_max_climb) / ch)),
            walkable_radius=int(np.ceil(F32(self.agent_radius) / cs)),
            max_edge_len=int(F32(self.edge_max_len) / cs),
            max_simplification_error=F32(self.edge_max_error),
            min_region_area=int(F32(self.region_min_size) * F32(self.region_min_size)),
            merge_region_area=int(F32(self.region_merge_size) * F32(self.region_merge_size)),
            max_verts_per_poly=int(self.verts_per_poly),
            detail_sample_dist=F32(0.0) if detail_dist < F32(0.9) else F32(cs * detail_dist),
            detail_sample_max_error=F32(ch * F32(self.detail_sample_max_error)),
        )


@dataclass(frozen=True)
class DerivedConfig:
    """Recast's rcConfig values in voxel units (float32 where Recast uses float)."""

    cs: np.float32
    ch: np.float32
    walkable_slope_angle: np.float32
    #: [Units: ch]
    walkable_height: int
    #: [Units: ch] also the span merge threshold of rasterization
    walkable_climb: int
    #: [Units: cells]
    walkable_radius: int
    #: [Units: cells]
    max_edge_len: int
    #: [Units: wu]
    max_simplification_error: np.float32
    #: [Units: cells]
    min_region_area: int
    #: [Units: cells]
    merge_region_area: int
    max_verts_per_poly: int
    #: [Units: wu]
    detail_sample_dist: np.float32
    #: [Units: wu]
    detail_sample_max_error: np.float32


def walkable_threshold(slope_degrees: float) -> np.float32:
    """cos of the max slope in float32, as Recast: cosf(angle / 180.0f * RC_PI)."""
    angle = F32(F32(slope_degrees) / F32(180.0)) * F32(math.pi)
    return F32(math.cos(float(F32(angle))))


def grid_size(bmin, bmax, cs) -> tuple[int, int]:
    """Columns along X and Y: int((bmax - bmin) / cs + 0.5) in float32 (Recast's rcCalcGridSize).

    ``bmin``/``bmax`` are Z-up world corners (float32 (3,)); returns (width, height).
    """
    bmin = np.asarray(bmin, dtype=F32)
    bmax = np.asarray(bmax, dtype=F32)
    cs = F32(cs)
    width = int(F32(F32(bmax[0] - bmin[0]) / cs) + F32(0.5))
    height = int(F32(F32(bmax[1] - bmin[1]) / cs) + F32(0.5))
    return width, height


def did_you_mean(word: str, choices: Iterable[str], prefix: str = "") -> str:
    """``"; did you mean cell_size?"`` for the closest choice (difflib), or ``""``."""
    match = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {prefix}{match[0]}?" if match else ""


def _normalise(name: str, value, strict: bool = False):
    """A setting's value in its field's type: sizes and text parsed, bools from on/off.

    Values that cannot be converted are returned unchanged (``validate`` then names the
    setting) unless ``strict``, where `VoxNavError` is raised at once.
    """
    default = NavConfig.default(name)
    try:
        if name == "memory_limit":
            return parse_size(value, name)
        if isinstance(default, bool):
            return parse_bool(value, name)
        if name in ("bounds_min", "bounds_max"):
            if isinstance(value, np.ndarray) and value.ndim == 0:
                return value.item()  # one number: `validate` names the setting
            return tuple(value) if isinstance(value, (list, np.ndarray)) else value
        if isinstance(default, str):
            text = str(value).strip().lower() if isinstance(value, str) else value
            if strict and text not in PARTITIONS:
                raise VoxNavError(
                    f"{name} must be one of {', '.join(PARTITIONS)}, got {value!r}"
                    f"{did_you_mean(str(value), PARTITIONS)}"
                )
            return text
        if isinstance(value, str):
            number = float(value.strip())
            if isinstance(default, int) and number == int(number):
                return int(number)
            if isinstance(default, int) and strict:
                raise ValueError(value)
            return number
        if isinstance(value, bool):
            raise ValueError(value)
        return value
    except (ValueError, OverflowError, VoxNavError) as exc:
        if not strict:
            return value
        if isinstance(exc, VoxNavError):
            raise
        kind = "a whole number" if isinstance(default, int) else "a number"
        raise VoxNavError(f"{name} must be {kind}, got {value!r}") from None


def _check_range(name: str, value, doc: SettingDoc, whole: bool) -> None:
    def where() -> str:
        # Only for the message: every bake validates its settings.
        unit = f" {doc.unit}" if doc.unit and doc.unit != "bytes" else ""
        default = NavConfig.default(name)
        shown_default = format_size(default) if name == "memory_limit" else f"{default}"
        return f"{doc.limits()}{unit} (default {shown_default})"

    if name == "memory_limit" and isinstance(value, str):
        parse_size(value, name)  # raises with the accepted forms
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        raise VoxNavError(f"{name} must be a number from {where()}, got {value!r}")
    number = float(value)
    if whole and (not math.isfinite(number) or number != int(number)):
        raise VoxNavError(f"{name} must be a whole number from {where()}, got {value!r}")
    # The value as the core uses it: float32 for the float settings.
    if whole or name == "memory_limit":
        used = number
    else:
        with np.errstate(over="ignore"):
            used = float(F32(number))
    ok = math.isfinite(used)
    if ok and doc.lo is not None:
        ok = used > doc.lo if doc.lo_open else used >= doc.lo
    if ok and doc.hi is not None:
        ok = used < doc.hi if doc.hi_open else used <= doc.hi
    if not ok:
        shown = f"{value!r}"
        if math.isfinite(number) and (not math.isfinite(used) or (used == 0 and number != 0)):
            shown += " (not representable in float32, which the core uses)"
        raise VoxNavError(f"{name} must be from {where()}, got {shown}")
