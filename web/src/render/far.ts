/**
 * Far animals as points, on a software rasteriser.
 *
 * Past the distance where a bird is drawn a few pixels long, its model's ten vertices
 * and four facets still cost a CPU rasteriser a few microseconds, for a shape the eye
 * cannot make out (in the meadow's framed view its 1,200 birds are two to five
 * drawing-buffer pixels long): a flock seen from afar is dots. A merged species layer of
 * flyers (`SpeciesLayer`) packs those birds after the near ones, and this batch draws each
 * as one point of about the model's size and colour there. Selected and highlighted birds
 * keep their model. Fish do not become points: a fish a few pixels long still reads as a
 * fish by its shape, which the lagoon and the reef are about.
 */
import * as THREE from "three";
import { farFragment, farVertex } from "./shaders";

/** A body drawn shorter than this many drawing-buffer pixels (before far animals grow) is a point. */
export const FAR_PIXELS = 5;

/** Distance (m) beyond which a body `scale` m long is drawn under FAR_PIXELS pixels (`pixelWorld`: m a pixel at 1 m). */
export function farDistance(scale: number, pixelWorld: number): number {
  return pixelWorld > 0 ? scale / (FAR_PIXELS * pixelWorld) : Infinity;
}

export class FarPoints {
  readonly points: THREE.Points;
  readonly material: THREE.ShaderMaterial;
  private geometry = new THREE.BufferGeometry();

  /**
   * `layer`: the merged batch's material, whose uniforms (the animals' texture, scale,
   * thickness, colour, lights) and texture row length this one shares; `centerY`: the
   * model's body centre above its origin (walkers stand on theirs).
   */
  constructor(layer: THREE.ShaderMaterial, centerY: number) {
    this.material = new THREE.ShaderMaterial({
      vertexShader: farVertex,
      fragmentShader: farFragment,
      uniforms: { ...layer.uniforms, uFarBase: { value: 0 }, uCenterY: { value: centerY } },
      defines: { MERGED_ROW: layer.defines.MERGED_ROW },
    });
    this.points = new THREE.Points(this.geometry, this.material);
    this.points.frustumCulled = false;
    this.points.name = "far-animals";
    this.show(0, 0);
  }

  /** Room for `capacity` points (the vertices carry nothing: each reads its animal by index). */
  setCapacity(capacity: number): void {
    if ((this.geometry.getAttribute("position")?.count ?? -1) >= capacity) return;
    const previous = this.geometry;
    this.geometry = new THREE.BufferGeometry();
    this.geometry.setAttribute("position", new THREE.BufferAttribute(new Float32Array(3 * capacity), 3));
    this.geometry.setDrawRange(previous.drawRange.start, previous.drawRange.count);
    this.points.geometry = this.geometry;
    previous.dispose();
  }

  /** Draw the `count` animals packed from row `base` on. */
  show(base: number, count: number): void {
    this.material.uniforms.uFarBase.value = base;
    this.geometry.setDrawRange(0, count);
  }

  get base(): number {
    return this.material.uniforms.uFarBase.value;
  }

  get count(): number {
    return this.geometry.drawRange.count;
  }

  setCenterY(centerY: number): void {
    this.material.uniforms.uCenterY.value = centerY;
  }

  dispose(): void {
    this.geometry.dispose();
    this.material.dispose();
  }
}
