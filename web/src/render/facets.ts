/**
 * Flat-coloured facets: one colour per triangle of a non-indexed geometry, worked out from
 * the facet's centre and its normal. The terrain (every tier) and the software tier's batch
 * of obstacles are coloured this way, which keeps low-poly facets crisp and lets a facet's
 * light be baked into its colour (`bakeLambert`).
 */
import * as THREE from "three";

/**
 * Colour of facet number `facet`, whose centre is (x, y, z) and unit normal `normal`
 * (counter-clockwise corners face it), into `out`.
 */
export type FacetColor = (out: THREE.Color, x: number, y: number, z: number, normal: THREE.Vector3, facet: number) => void;

/** Give every facet of `geometry` (three vertices each, no index) one `color` attribute value at its three corners. */
export function colorFacets(geometry: THREE.BufferGeometry, color: FacetColor): void {
  const p = geometry.getAttribute("position");
  const colors = new Float32Array(p.count * 3);
  const a = new THREE.Vector3(), b = new THREE.Vector3(), c = new THREE.Vector3();
  const e1 = new THREE.Vector3(), e2 = new THREE.Vector3(), normal = new THREE.Vector3();
  const out = new THREE.Color();
  for (let v = 0, facet = 0; v + 2 < p.count; v += 3, facet++) {
    a.fromBufferAttribute(p, v);
    b.fromBufferAttribute(p, v + 1);
    c.fromBufferAttribute(p, v + 2);
    normal.crossVectors(e1.subVectors(b, a), e2.subVectors(c, a)).normalize();
    color(out, (a.x + b.x + c.x) / 3, (a.y + b.y + c.y) / 3, (a.z + b.z + c.z) / 3, normal, facet);
    for (let k = v; k < v + 3; k++) out.toArray(colors, 3 * k);
  }
  geometry.setAttribute("color", new THREE.BufferAttribute(colors, 3));
}
