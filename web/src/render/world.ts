/**
 * The stage: renderer, camera, sky, lights, fog and the ground or grid that
 * stands in until a scenario brings its own terrain. Light and fog values live
 * in one shared uniform set so the custom animal and water shaders are lit
 * exactly like the built-in materials used for terrain and obstacles.
 */
import * as THREE from "three";
import type { Vec3 } from "../protocol/messages";

const SUN_DIRECTION = new THREE.Vector3(0.45, 0.8, 0.35).normalize();

/** Colours of the sun, the sky and the ground: the built-in materials' lights and the animal shader's. */
const SUN = 0xfff1dc, SKY = 0x9fc3e6, GROUND = 0x3a3326;

/** The scene's two lights: a hemisphere (sky over ground) and the sun. */
export const LIGHTS = {
  sunDirection: SUN_DIRECTION,
  sun: new THREE.Color(SUN).multiplyScalar(2.2),
  sky: new THREE.Color(SKY).multiplyScalar(1.4),
  ground: new THREE.Color(GROUND).multiplyScalar(1.4),
} as const;

/**
 * What `MeshLambertMaterial` would draw for a surface of colour `albedo` facing
 * `normal` under LIGHTS (linear colours; the renderer converts to sRGB): albedo/π
 * times the sun's irradiance plus the hemisphere's. Faceted scenery baked this way
 * can be drawn unlit, which on a software rasteriser saves the lighting of every pixel.
 * `out` may be `albedo` itself.
 */
export function bakeLambert(out: THREE.Color, albedo: THREE.Color, normal: THREE.Vector3): THREE.Color {
  const sun = Math.max(normal.dot(LIGHTS.sunDirection), 0);
  const up = 0.5 * normal.y + 0.5;
  const light = (c: "r" | "g" | "b") => LIGHTS.sun[c] * sun + LIGHTS.ground[c] + (LIGHTS.sky[c] - LIGHTS.ground[c]) * up;
  return out.setRGB((albedo.r * light("r")) / Math.PI, (albedo.g * light("g")) / Math.PI, (albedo.b * light("b")) / Math.PI);
}

/** What `bakedMaterial` adds to three.js's vertex shader: the linear fog, mixed into the colour at each corner. */
export const BAKED_FOG_VERTEX = /* glsl */ `
#include <fog_vertex>
#if defined( USE_FOG ) && !defined( FOG_EXP2 ) && defined( USE_COLOR )
  vColor.rgb = mix( vColor.rgb, fogColor, smoothstep( fogNear, fogFar, vFogDepth ) );
#endif`;

/**
 * The unlit material of facets whose light is baked (`bakeLambert`) and whose colours are
 * given in the canvas's sRGB (`Color.convertLinearToSRGB`), for the scenery a software
 * rasteriser draws over most of the screen, where every operation a pixel counts:
 *
 * - it leaves out the linear → sRGB conversion three.js writes into every fragment shader
 *   (three powers a pixel, about a quarter of what the terrain cost);
 * - it mixes the linear fog in at the corners, not at every pixel, as fixed-function fog
 *   did (about as much again). Three.js mixes its fog in after the conversion too, with the
 *   same colour and the same depth; between corners the fog is interpolated, which over a
 *   facet of some metres against a fog hundreds of metres deep cannot be seen.
 */
export function bakedMaterial(): THREE.MeshBasicMaterial {
  const material = new THREE.MeshBasicMaterial({ vertexColors: true });
  material.onBeforeCompile = (shader) => {
    shader.vertexShader = shader.vertexShader
      .replace("#include <fog_pars_vertex>", "#include <fog_pars_vertex>\n#ifdef USE_FOG\nuniform vec3 fogColor;\nuniform float fogNear;\nuniform float fogFar;\n#endif")
      .replace("#include <fog_vertex>", BAKED_FOG_VERTEX);
    shader.fragmentShader = shader.fragmentShader
      .replace("#include <colorspace_fragment>", "")
      .replace("#include <fog_fragment>", "");
  };
  material.customProgramCacheKey = () => "baked-srgb-vertex-fog";
  return material;
}

/**
 * True when WebGL runs on a CPU rasteriser (SwiftShader, llvmpipe): there,
 * multisampling and high-DPI buffers cost more than everything else together, so
 * the viewer drops them. `?quality=high|low` in the URL overrides the guess.
 */
export function softwareRendering(): boolean {
  const forced = new URLSearchParams(location.search).get("quality");
  if (forced === "high") return false;
  if (forced === "low") return true;
  try {
    const gl = document.createElement("canvas").getContext("webgl2");
    if (!gl) return false;
    const info = gl.getExtension("WEBGL_debug_renderer_info");
    const name = String(gl.getParameter(info ? info.UNMASKED_RENDERER_WEBGL : gl.RENDERER));
    gl.getExtension("WEBGL_lose_context")?.loseContext();
    return /swiftshader|llvmpipe|software|softpipe/i.test(name);
  } catch {
    return false;
  }
}

export class World {
  readonly renderer: THREE.WebGLRenderer;
  readonly scene = new THREE.Scene();
  readonly camera: THREE.PerspectiveCamera;
  readonly lightUniforms: Record<string, THREE.IUniform>;
  readonly sunWorld = SUN_DIRECTION.clone();
  readonly skyTop = new THREE.Color("#1d3a5c");
  readonly horizon = new THREE.Color("#8ea4b5");
  private readonly ground: THREE.Group = new THREE.Group();
  private horizonShown = NaN;
  private readonly skyCss: { top: string; mid: string; horizon: string };
  groundY = 0;
  boundsMin = new THREE.Vector3(-50, 0, -50);
  boundsMax = new THREE.Vector3(50, 30, 50);

  readonly software = softwareRendering();

  constructor(readonly canvas: HTMLCanvasElement) {
    // The canvas is transparent where nothing is drawn: the sky is a CSS gradient behind
    // it (see updateSky), which costs nothing per pixel even on a software rasteriser.
    this.renderer = new THREE.WebGLRenderer({ canvas, antialias: !this.software, alpha: true, powerPreference: "high-performance" });
    this.renderer.setClearColor(0x000000, 0);
    this.renderer.outputColorSpace = THREE.SRGBColorSpace;
    this.camera = new THREE.PerspectiveCamera(55, 1, 0.1, 5000);
    this.camera.position.set(60, 40, 80);

    this.lightUniforms = {
      uSunView: { value: new THREE.Vector3() },
      uUpView: { value: new THREE.Vector3() },
      uSunColor: { value: new THREE.Color(SUN).multiplyScalar(1.05) },
      uSkyColor: { value: new THREE.Color(SKY) },
      uGroundColor: { value: new THREE.Color(GROUND) },
      uFogColor: { value: this.horizon.clone() },
      uFogNear: { value: 200 },
      uFogFar: { value: 1200 },
      // The scene's water (set by the environment): things under it are tinted by depth.
      uWaterOn: { value: 0 },
      uWaterLevel: { value: 0 },
      uWaterColor: { value: new THREE.Color("#1d5d7a") },
      uWaterRect: { value: new THREE.Vector4() },
      // World size of one drawing-buffer pixel at distance 1 (kept up to date by resize).
      uPixelWorld: { value: 0 },
    };

    const css = (c: THREE.Color) => `#${c.getHexString(THREE.SRGBColorSpace)}`;
    this.skyCss = {
      top: css(this.skyTop),
      mid: css(this.skyTop.clone().lerp(this.horizon, 0.55)),
      horizon: css(this.horizon),
    };

    const hemi = new THREE.HemisphereLight(0xffffff, 0xffffff, 1);
    hemi.color.copy(LIGHTS.sky);
    hemi.groundColor.copy(LIGHTS.ground);
    const sun = new THREE.DirectionalLight(0xffffff, 1);
    sun.color.copy(LIGHTS.sun);
    sun.position.copy(SUN_DIRECTION).multiplyScalar(100);
    this.scene.add(hemi, sun);
    this.scene.fog = new THREE.Fog(this.horizon, 200, 1200);
    this.scene.add(this.ground);
    this.setRenderScale(1);
  }

  /** Fit fog, clipping planes and the placeholder ground to the scenario's world box. */
  setBounds(min: Vec3, max: Vec3, hasTerrain: boolean): void {
    this.boundsMin.set(...min);
    this.boundsMax.set(...max);
    const size = new THREE.Vector3().subVectors(this.boundsMax, this.boundsMin);
    const extent = Math.max(size.x, size.y, size.z, 10);
    this.camera.near = Math.max(0.05, extent / 5000);
    this.camera.far = extent * 30;
    this.camera.updateProjectionMatrix();
    const fogNear = extent * 1.2, fogFar = extent * 6;
    this.lightUniforms.uFogNear.value = fogNear;
    this.lightUniforms.uFogFar.value = fogFar;
    const fog = this.scene.fog as THREE.Fog;
    fog.near = fogNear;
    fog.far = fogFar;

    this.ground.clear();
    this.groundY = min[1];
    const center = new THREE.Vector3().addVectors(this.boundsMin, this.boundsMax).multiplyScalar(0.5);
    if (!hasTerrain) {
      const span = Math.max(size.x, size.z, 10) * 8;
      // Flat ground under a fixed sun is one colour: an unlit material gives the same
      // picture for a fraction of the per-pixel cost.
      const plane = new THREE.Mesh(
        new THREE.PlaneGeometry(span, span).rotateX(-Math.PI / 2),
        new THREE.MeshBasicMaterial({ color: 0x3b4a3a }),
      );
      plane.position.set(center.x, this.groundY - 0.02, center.z);
      plane.name = "ground";
      this.ground.add(plane);
      const cells = 24;
      const gridSize = Math.max(size.x, size.z, 10) * 2;
      const grid = new THREE.GridHelper(gridSize, cells, 0x6f8a78, 0x51625a);
      (grid.material as THREE.Material).transparent = true;
      (grid.material as THREE.Material).opacity = 0.45;
      grid.position.set(center.x, this.groundY, center.z);
      this.ground.add(grid);
    }
    const box = worldBox(this.boundsMin, this.boundsMax, hasTerrain);
    if (box) this.ground.add(box);
  }

  /**
   * Move the CSS sky's horizon to where the world's horizon is on screen, so the
   * gradient meets the fog colour at the far edge of the ground as the camera tilts.
   */
  private updateSky(): void {
    const cam = this.camera;
    const forward = cam.getWorldDirection(new THREE.Vector3());
    forward.y = 0;
    let horizon: number;
    if (forward.lengthSq() < 1e-8) {
      horizon = cam.quaternion.y < 0 ? 1 : 0;
    } else {
      const far = cam.position.clone().addScaledVector(forward.normalize(), cam.far * 0.5).project(cam);
      horizon = THREE.MathUtils.clamp((1 - far.y) / 2, -1, 2);
    }
    if (Math.abs(horizon - this.horizonShown) < 0.002) return;
    this.horizonShown = horizon;
    const h = horizon * 100;
    const { top, mid, horizon: haze } = this.skyCss;
    this.canvas.style.background =
      `linear-gradient(to bottom, ${top} ${(h - 90).toFixed(1)}%, ${mid} ${(h - 30).toFixed(1)}%, ${haze} ${h.toFixed(1)}%, ${haze} 100%)`;
  }

  /** Keep view-space light directions in step with the camera (called once per frame). */
  updateLights(): void {
    const view = this.camera.matrixWorldInverse;
    (this.lightUniforms.uSunView.value as THREE.Vector3).copy(this.sunWorld).transformDirection(view);
    (this.lightUniforms.uUpView.value as THREE.Vector3).set(0, 1, 0).transformDirection(view);
  }

  /** Drawing-buffer pixels per CSS pixel, relative to the device's (software tier: set by DynamicResolution). */
  renderScale = 1;

  /** Set the scale, on top of the device's pixel ratio (1 on a software rasteriser: no high-DPI buffers there). */
  setRenderScale(scale: number): void {
    this.renderScale = scale;
    // Stretched without smoothing: small animals keep their colour instead of being
    // averaged into the background (a fish under water stays golden, a bird dark).
    this.canvas.style.imageRendering = scale < 1 ? "pixelated" : "";
    this.renderer.setPixelRatio(scale * (this.software ? 1 : Math.min(window.devicePixelRatio, 2)));
    this.resize();
  }

  resize(): void {
    const w = this.canvas.clientWidth || window.innerWidth;
    const h = this.canvas.clientHeight || window.innerHeight;
    this.renderer.setSize(w, h, false);
    this.camera.aspect = w / Math.max(h, 1);
    this.camera.updateProjectionMatrix();
    const buffer = this.renderer.getDrawingBufferSize(new THREE.Vector2());
    this.lightUniforms.uPixelWorld.value = (2 * Math.tan(THREE.MathUtils.degToRad(this.camera.fov) / 2)) / Math.max(buffer.y, 1);
  }

  render(): void {
    this.camera.updateMatrixWorld();
    this.updateLights();
    this.updateSky();
    this.renderer.render(this.scene, this.camera);
  }
}

/**
 * The simulation's box, faintly, so that flocks in open air have a frame of reference; none
 * over terrain, which frames the world itself (the box's upper edges would be stray lines
 * across the sky of a landscape).
 */
export function worldBox(min: THREE.Vector3, max: THREE.Vector3, hasTerrain: boolean): THREE.Box3Helper | null {
  if (hasTerrain) return null;
  const box = new THREE.Box3Helper(new THREE.Box3(min.clone(), max.clone()), new THREE.Color(0x9fb4c4));
  (box.material as THREE.Material).transparent = true;
  (box.material as THREE.Material).opacity = 0.25;
  box.name = "world-box";
  return box;
}
