// Load a Detour navmesh-set file (.bin) with the real Detour (npm recast-navigation, a
// WebAssembly build of recastnavigation) and answer queries; used by test_detour_runtime.py.
//
//   node detour_queries.mjs QUERIES.json
//
// QUERIES.json: {"bin": path, "half_extents": [x, y, z], "points": [[x, y, z], ...],
// "pairs": [[a, b], ...], "rays": [[start_index, [x, y, z]], ...], "max_nodes": 2048}
// (Detour's Y-up frame). Prints one JSON object: per point the findNearestPoly status, polygon
// (tile index, polygon index in the tile; -1 when none), nearest point, over-poly flag and
// getPolyHeight; per pair the findPath corridor and the findStraightPath points, flags and
// polygons, as RecastDemo's tester runs them; per ray the raycast status, t and hit normal.
import { readFileSync } from 'node:fs';
import { init, importNavMesh, NavMeshQuery } from 'recast-navigation';

const PARTIAL_RESULT = 0x40;
const u32 = (status) => status >>> 0;
const xyz = (p) => ({ x: p[0], y: p[1], z: p[2] });
const arr = (v) => [v.x, v.y, v.z];

async function main() {
  const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
  await init();
  const data = new Uint8Array(readFileSync(spec.bin));
  const { navMesh } = importNavMesh(data);
  const query = new NavMeshQuery(navMesh, { maxNodes: spec.max_nodes ?? 2048 });
  const polyOf = (ref) => {
    if (!ref) return [-1, -1];
    const id = navMesh.decodePolyId(ref);
    return [id.tileIndex, id.tilePolygonIndex];
  };
  const halfExtents = xyz(spec.half_extents);

  const near = spec.points.map((p) => {
    const r = query.findNearestPoly(xyz(p), { halfExtents });
    const out = {
      status: u32(r.status),
      ref: r.nearestRef >>> 0,
      poly: polyOf(r.nearestRef),
      pt: r.nearestRef ? arr(r.nearestPoint) : null,
      over: r.isOverPoly ? 1 : 0,
    };
    if (r.nearestRef) {
      const h = query.getPolyHeight(r.nearestRef, r.nearestPoint);
      out.height_status = u32(h.status);
      out.height = h.height;
    }
    return out;
  });

  const paths = spec.pairs.map(([a, b]) => {
    const na = near[a];
    const nb = near[b];
    // A point without a polygon keeps its query position: Detour then answers "invalid param".
    const pa = na.pt ?? spec.points[a];
    const pb = nb.pt ?? spec.points[b];
    const fp = query.findPath(na.ref, nb.ref, xyz(pa), xyz(pb), { maxPathPolys: 256 });
    const refs = Array.from(fp.polys.getHeapView());
    fp.polys.destroy();
    const out = { status: u32(fp.status), polys: refs.map(polyOf) };
    if (refs.length === 0) return out;
    let end = xyz(pb);
    if (fp.status & PARTIAL_RESULT) {
      end = query.closestPointOnPoly(refs[refs.length - 1], end).closestPoint;
    }
    const sp = query.findStraightPath(xyz(pa), end, refs, { maxStraightPathPoints: 256 });
    const n = sp.straightPathCount;
    const pts = Array.from(sp.straightPath.getHeapView()).slice(0, 3 * n);
    out.straight_status = u32(sp.status);
    out.straight_end = arr(end);
    out.straight_pts = Array.from({ length: n }, (_, i) => pts.slice(3 * i, 3 * i + 3));
    out.straight_flags = Array.from(sp.straightPathFlags.getHeapView()).slice(0, n);
    out.straight_polys = Array.from(sp.straightPathRefs.getHeapView()).slice(0, n).map(polyOf);
    sp.straightPath.destroy();
    sp.straightPathFlags.destroy();
    sp.straightPathRefs.destroy();
    return out;
  });

  const rays = (spec.rays ?? []).map(([s, endPos]) => {
    const ns = near[s];
    if (!ns.ref) return { status: null };
    const r = query.raycast(ns.ref, xyz(ns.pt), xyz(endPos));
    return { status: u32(r.status), t: r.t, normal: arr(r.hitNormal) };
  });

  const tiles = [];
  for (let i = 0; i < navMesh.getMaxTiles(); i++) {
    const tile = navMesh.getTile(i);
    const header = tile.header();
    if (header) tiles.push({ index: i, x: header.x(), y: header.y(), polys: header.polyCount() });
  }
  process.stdout.write(JSON.stringify({ tiles, near, paths, rays }));
}

main().catch((err) => {
  process.stderr.write(`detour_queries: ${err && err.stack ? err.stack : err}\n`);
  process.exit(1);
});
