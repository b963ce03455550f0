/**
 * GLSL for the animals and the water.
 *
 * Animals are drawn with one instanced draw call per species. Each instance
 * carries its position, orientation quaternion and an animation vector; all
 * limb motion happens here so the CPU only streams the simulation's numbers:
 *  - flyers flap their wings about the wing roots;
 *  - walkers swing their legs in a trot whose amplitude follows their speed;
 *  - swimmers bend their whole body along the path the head has travelled
 *    (seed 004, §2). The head's recent path is approximated by a circular arc
 *    with the instance's measured curvature (yaw and pitch, from the change of
 *    heading between frames): a vertex `s` behind the head is placed on that arc
 *    `s` back from the head and turned with the heading the head had there,
 *    which is what placing spine bones on the trajectory gives for a steady
 *    turn. Sharks add the side-to-side sinusoid the seed describes on top.
 * Facets are shaded flat from screen-space derivatives, which stays correct
 * after the vertex shader has bent the mesh.
 */

/** Largest factor by which far animals are grown to stay at least MIN_PIXELS thick. */
export const MAX_INFLATION = 3;

const common = /* glsl */ `
vec3 qrot(vec4 q, vec3 v) {
  vec3 t = 2.0 * cross(q.xyz, v);
  return v + q.w * t + cross(q.xyz, t);
}
`;

export const animalVertex = /* glsl */ `
attribute vec4 aRig;
attribute vec4 aColor;
#ifdef MERGED
// One draw of every animal's copy of the model (SpeciesLayer, merged): vertex v belongs to
// animal v / VERTS, whose numbers are three texels of uInstances (MERGED_ROW animals a row).
uniform highp sampler2D uInstances;
vec3 iPos;
vec4 iQuat;
vec4 iAnim;
float iPhase;
void fetchInstance() {
  int i = gl_VertexID / VERTS;
  ivec2 at = ivec2(3 * (i % MERGED_ROW), i / MERGED_ROW);
  vec4 a = texelFetch(uInstances, at, 0);
  iPos = a.xyz;
  iPhase = a.w;
  iQuat = texelFetch(uInstances, at + ivec2(1, 0), 0);
  iAnim = texelFetch(uInstances, at + ivec2(2, 0), 0);
}
#else
attribute vec3 iPos;
attribute vec4 iQuat;
attribute vec4 iAnim;
attribute float iPhase;
void fetchInstance() {}
#endif

uniform float uScale;
uniform float uTime;
uniform float uHeadZ;
uniform float uLength;
// The species' motion (Motion in models.ts) is a compile-time constant, MOTION: one
// program per kind of motion, with no other kind's code in it (a software rasteriser
// would pay for every branch of every vertex).
#ifndef MOTION
#define MOTION 0
#endif
// World size of one drawing-buffer pixel at distance 1, and the model's thickness (its
// smaller cross extent, in body lengths): far animals are drawn at least MIN_PIXELS thick.
uniform float uPixelWorld;
uniform float uThickness;
#define MIN_PIXELS 1.6
#define MAX_INFLATION ${MAX_INFLATION.toFixed(1)}

varying vec3 vViewPosition;
varying vec3 vColor;
varying float vTint;
varying float vHighlight;
varying vec3 vModel;
varying vec3 vWorld;
${common}

vec3 rotateX(vec3 p, vec3 pivot, float a) {
  vec3 d = p - pivot; float c = cos(a), s = sin(a);
  return pivot + vec3(d.x, c * d.y - s * d.z, s * d.y + c * d.z);
}
vec3 rotateZ(vec3 p, vec3 pivot, float a) {
  vec3 d = p - pivot; float c = cos(a), s = sin(a);
  return pivot + vec3(c * d.x - s * d.y, s * d.x + c * d.y, d.z);
}
vec3 rotateY(vec3 p, vec3 pivot, float a) {
  vec3 d = p - pivot; float c = cos(a), s = sin(a);
  return pivot + vec3(c * d.x + s * d.z, d.y, -s * d.x + c * d.z);
}

// Place (side, z) on an arc of curvature k (per model unit) that ends at the head
// going +z and curves toward +side; returns the new (side, z).
vec2 alongPath(float side, float z, float k) {
  float s = max(uHeadZ - z, 0.0);
  float a = k * s;
  float c = cos(a), sn = sin(a);
  float spineSide = abs(k) < 1e-4 ? 0.5 * k * s * s : (1.0 - c) / k;
  float spineZ = abs(k) < 1e-4 ? uHeadZ - s : uHeadZ - sn / k;
  return vec2(spineSide + side * c, spineZ + side * sn);
}

void main() {
  fetchInstance();
  vec3 p = position;
  int part = int(aRig.x + 0.5);
  vec3 pivot = aRig.yzw;
  float speed = iAnim.x;
  float phase = iPhase * 6.2831853;
  float rate = 0.85 + 0.3 * fract(iPhase * 7.31);

#if MOTION == 1
  {
    // Flyers: wing beat about the root; slower, shallower beats when gliding fast.
    float beat = sin(uTime * 6.0 * 6.2831853 * rate / max(sqrt(uScale), 0.5) + phase);
    float amp = 0.75;
    if (part == 1) p = rotateZ(p, pivot, beat * amp);
    else if (part == 2) p = rotateZ(p, pivot, -beat * amp);
    else if (part == 7) p = rotateX(p, pivot, 0.15 * beat);
  }
#elif MOTION == 2 || MOTION == 3
  {
    // Swimmers: body follows the head's arc, plus a travelling tail wave.
    float kYaw = iAnim.y * uScale;
    float kPitch = iAnim.z * uScale;
    float limit = 2.2 / uLength;
    kYaw = clamp(kYaw, -limit, limit);
    kPitch = clamp(kPitch, -limit, limit);
    float s = max(uHeadZ - p.z, 0.0) / uLength;
    bool shark = MOTION == 3;
    float amp = (shark ? 0.07 : 0.09) * (0.35 + 0.65 * min(speed / (2.0 * uScale), 1.5));
    float wave = sin(6.2831853 * (uTime * (shark ? 1.1 : 2.4) * rate - s * (shark ? 0.8 : 1.1)) + phase);
    p.x += amp * s * s * wave * uLength;
    vec2 xz = alongPath(p.x, p.z, kYaw);
    p.x = xz.x; p.z = xz.y;
    vec2 yz = alongPath(p.y, p.z, kPitch);
    p.y = yz.x; p.z = yz.y;
  }
#elif MOTION == 4
  {
    // Walkers: trot (diagonal legs together), amplitude from speed; tails and ears sway.
    float gait = min(speed / (1.2 * uScale), 1.0);
    float t = uTime * 6.2831853 * 1.6 * rate / max(sqrt(uScale), 0.6) + phase;
    if (part == 3 || part == 6) p = rotateX(p, pivot, 0.55 * gait * sin(t));
    else if (part == 4 || part == 5) p = rotateX(p, pivot, -0.55 * gait * sin(t));
    else if (part == 7) p = rotateY(p, pivot, 0.35 * sin(0.5 * t + 1.3));
    else if (part == 8) p = rotateX(p, pivot, 0.12 * sin(0.37 * uTime * 6.2831853 + phase));
    else if (part == 9) p = rotateX(p, pivot, 0.18 * sin(0.4 * t));
  }
#endif

  vModel = p;
  // A body thinner than a pixel or two would flicker in and out (no rasteriser draws a
  // triangle between pixel centres): far away, animals grow to stay visible.
  float dist = length((viewMatrix * vec4(iPos, 1.0)).xyz);
  float scale = uScale * clamp(MIN_PIXELS * dist * uPixelWorld / max(uThickness * uScale, 1e-4), 1.0, MAX_INFLATION);
  vec3 world = iPos + qrot(iQuat, p * scale);
  vWorld = world;
  vec4 mv = viewMatrix * vec4(world, 1.0);
  vViewPosition = -mv.xyz;
  vColor = aColor.rgb;
  vTint = aColor.a;
  vHighlight = iAnim.w;
  gl_Position = projectionMatrix * mv;
}
`;

const lighting = /* glsl */ `
uniform vec3 uSunView;
uniform vec3 uUpView;
uniform vec3 uSunColor;
uniform vec3 uSkyColor;
uniform vec3 uGroundColor;
uniform vec3 uFogColor;
uniform float uFogNear;
uniform float uFogFar;

vec3 shade(vec3 base, vec3 n, vec3 viewPos) {
  float hemi = 0.5 + 0.5 * dot(n, uUpView);
  vec3 ambient = mix(uGroundColor, uSkyColor, hemi);
  float diffuse = max(dot(n, uSunView), 0.0);
  vec3 v = normalize(viewPos);
  float rim = pow(1.0 - max(dot(n, v), 0.0), 3.0);
  return base * (ambient * 0.75 + uSunColor * diffuse) + rim * 0.12 * uSkyColor;
}

vec3 fog(vec3 color, float dist) {
  return mix(color, uFogColor, smoothstep(uFogNear, uFogFar, dist));
}

// Under the scene's water surface (inside its rectangle) colours fade toward the
// water's colour with depth: a hint of absorption that says "under water" without
// hiding what swims there.
uniform float uWaterOn;
uniform float uWaterLevel;
uniform vec3 uWaterColor;
uniform vec4 uWaterRect;

vec3 underwater(vec3 color, vec3 world) {
  if (uWaterOn < 0.5) return color;
  float depth = uWaterLevel - world.y;
  if (depth <= 0.0 || world.x < uWaterRect.x || world.z < uWaterRect.y || world.x > uWaterRect.z || world.z > uWaterRect.w) {
    return color;
  }
  return mix(color, uWaterColor, clamp(0.08 + 0.018 * depth, 0.0, 0.32));
}
`;

export const animalFragment = /* glsl */ `
uniform vec3 uColor;
uniform int uPattern;
uniform float uTime;
varying vec3 vViewPosition;
varying vec3 vColor;
varying float vTint;
varying float vHighlight;
varying vec3 vModel;
varying vec3 vWorld;
${lighting}

void main() {
  vec3 n = normalize(cross(dFdx(vViewPosition), dFdy(vViewPosition)));
  vec3 base = vTint > 0.5 ? uColor * vColor : vColor;
  if (uPattern == 1 && vTint > 0.5) {
    // Zebra: stripes slanted along the body.
    float stripe = step(0.5, fract(vModel.z * 9.0 + vModel.y * 4.0 + sin(vModel.y * 11.0) * 0.3));
    base *= mix(0.08, 1.0, stripe);
  }
  base *= mix(0.82, 1.08, smoothstep(-0.15, 0.25, vModel.y - 0.02));
  vec3 color = underwater(shade(base, n, vViewPosition), vWorld);
  if (vHighlight > 1.5) {
    float pulse = 0.5 + 0.5 * sin(uTime * 8.0);
    color = mix(color, vec3(1.0, 0.78, 0.2), 0.55 + 0.2 * pulse);
  } else if (vHighlight > 0.5) {
    color = mix(color, vec3(0.25, 0.85, 1.0), 0.6);
  }
  color = fog(color, length(vViewPosition));
  gl_FragColor = linearToOutputTexel(vec4(color, 1.0));
}
`;

/**
 * Far animals on a software rasteriser (FarPoints): one point each, read from the same
 * texture as the merged batch (rows from uFarBase on), the size of the body as the model
 * would be drawn there (grown as far models are), lit as its upper facets, fogged and
 * tinted under water as they are. One vertex instead of a model's ten to forty.
 */
export const farVertex = /* glsl */ `
uniform highp sampler2D uInstances;
uniform int uFarBase;
uniform float uScale;
uniform float uThickness;
uniform float uCenterY;
uniform float uPixelWorld;
uniform vec3 uColor;
#define MIN_PIXELS 1.6
#define MAX_INFLATION ${MAX_INFLATION.toFixed(1)}
varying vec3 vColor;
${lighting}

void main() {
  int i = uFarBase + gl_VertexID;
  vec3 world = texelFetch(uInstances, ivec2(3 * (i % MERGED_ROW), i / MERGED_ROW), 0).xyz;
  world.y += uCenterY * uScale;
  vec4 mv = viewMatrix * vec4(world, 1.0);
  float dist = max(length(mv.xyz), 1e-3);
  float inflation = clamp(MIN_PIXELS * dist * uPixelWorld / max(uThickness * uScale, 1e-4), 1.0, MAX_INFLATION);
  // about as much ink as the model drawn there, whose thin limbs fill little of their box
  gl_PointSize = max(1.0, 0.3 * uScale * inflation / (dist * uPixelWorld));
  gl_Position = projectionMatrix * mv;
  // lit as the body's side that faces the eye (its back from above, its belly from below),
  // without the rim light that only a body's outline catches
  vec3 n = dot(uUpView, -mv.xyz) >= 0.0 ? uUpView : -uUpView;
  vColor = fog(underwater(shade(uColor * 0.85, n, n), world), dist);
}
`;

export const farFragment = /* glsl */ `
varying vec3 vColor;
void main() {
  gl_FragColor = linearToOutputTexel(vec4(vColor, 1.0));
}
`;

/** Largest number of waves the water shader sums (seed 004 uses 16). */
export const MAX_WAVES = 16;

const waveField = /* glsl */ `
#define MAX_WAVES ${MAX_WAVES}
uniform float uTime;
uniform int uWaveCount;
uniform vec2 uWaveDir[MAX_WAVES];
uniform vec3 uWave[MAX_WAVES];   // amplitude, spatial angular frequency, temporal angular frequency
uniform float uLateral;

// Height of the summed exp-sine waves, psi_i = A (exp(sin(theta)) - exp(-1)),
// and its analytic gradient d/dx, d/dz = A k d cos(theta) exp(sin(theta)).
vec3 waves(vec2 p) {
  float h = 0.0;
  vec2 g = vec2(0.0);
  for (int i = 0; i < MAX_WAVES; i++) {
    if (i >= uWaveCount) break;
    vec3 w = uWave[i];
    float theta = w.y * dot(p, uWaveDir[i]) + w.z * uTime;
    float e = exp(sin(theta));
    h += w.x * (e - 0.36787944);
    g += w.x * w.y * uWaveDir[i] * cos(theta) * e;
  }
  return vec3(h, g);
}

// Seed 004, 3.2: sample the field where the point "came from" under the lateral
// motion, p~ = p - alpha * grad(p), so crests gather without moving vertices.
vec3 surface(vec2 p) {
  vec3 first = waves(p);
  return waves(p - uLateral * first.yz);
}
`;

export const waterVertex = /* glsl */ `
uniform float uLevel;
varying vec3 vWorld;
varying vec3 vViewPosition;
#ifdef WATER_PER_VERTEX
varying vec3 vSurface;
#endif
${waveField}

void main() {
  vec2 p = (modelMatrix * vec4(position, 1.0)).xz;
  vec3 s = surface(p);
  float h = s.x;
#ifdef WATER_PER_VERTEX
  vSurface = s;
#endif
  vec4 world = vec4(p.x, uLevel + h, p.y, 1.0);
  vWorld = world.xyz;
  vec4 mv = viewMatrix * world;
  vViewPosition = -mv.xyz;
  gl_Position = projectionMatrix * mv;
}
`;

export const waterFragment = /* glsl */ `
uniform vec3 uDeep;
uniform vec3 uShallow;
uniform vec3 uSunWorld;
uniform vec3 uSkyTop;
uniform float uOpacity;
varying vec3 vWorld;
varying vec3 vViewPosition;
#ifdef WATER_PER_VERTEX
varying vec3 vSurface;
#endif
${waveField}
${lighting}

void main() {
  // Height and slope of the waves here: summed for every pixel, or (on software
  // rasterisers, where each wave costs every pixel of water) at the vertices and
  // interpolated, which keeps the swell and loses only ripples finer than the grid.
#ifdef WATER_PER_VERTEX
  vec3 s = vSurface;
#else
  vec3 s = surface(vWorld.xz);
#endif
  // Tangents (1, dh/dx, 0) and (0, dh/dz, 1): their cross product is the normal.
  vec3 n = normalize(vec3(-s.y, 1.0, -s.z));
  vec3 toEye = normalize(cameraPosition - vWorld);
  if (dot(toEye, n) < 0.0) n = -n;
  float fresnel = 0.04 + 0.96 * pow(1.0 - max(dot(n, toEye), 0.0), 5.0);
  vec3 body = mix(uDeep, uShallow, clamp(0.5 + 2.0 * s.x, 0.0, 1.0));
  vec3 reflected = reflect(-toEye, n);
  vec3 sky = mix(uFogColor, uSkyTop, clamp(reflected.y, 0.0, 1.0));
  vec3 color = mix(body, sky, fresnel);
  // A tight sun glint: small, bright and opaque where it is, so that it reads as a
  // sparkle on the surface instead of greying the whole see-through water.
  float spec = pow(max(dot(reflected, normalize(uSunWorld)), 0.0), 400.0);
  color += uSunColor * spec * 1.5;
  color = fog(color, length(vViewPosition));
  float alpha = clamp(mix(uOpacity, 1.0, fresnel) + 0.6 * spec, 0.0, 1.0);
  gl_FragColor = linearToOutputTexel(vec4(color, alpha));
}
`;
