/** JSON messages exchanged with the server (mirrors starling/server/protocol.py and docs/protocol.md). */

export type Vec3 = [number, number, number];

export interface SpeciesInfo {
  index: number;
  name: string;
  model: string;
  color: string;
  scale: number;
}

/**
 * A frame block that is not a species: a population made by the simulation's systems
 * (the ecology's apples, carcasses, sounds and player). Entity blocks follow the species
 * blocks in every frame; `index` is the block's position there.
 */
export interface EntityInfo {
  index: number;
  name: string;
  kind: "apple" | "carcass" | "sound" | "player" | "other";
  /** Carcass blocks: the model, colour and scale of the species the carcasses came from. */
  model?: string | null;
  color?: string | null;
  scale?: number;
  /** Carcass blocks: the tag the block's carcasses carry (null: carcasses of no known species). */
  tag?: string | null;
  /** Sound blocks: seconds a sound lasts (its radius travels in the speed column, in cm). */
  lifetime?: number | null;
}

export interface Heightfield {
  origin: [number, number];
  size: [number, number];
  resolution: [number, number];
  heights: number[];
  color?: string;
}

export interface Wave {
  amplitude: number;
  wavelength: number;
  speed: number;
  direction: [number, number];
}

export interface Water {
  level: number;
  bounds_min: [number, number];
  bounds_max: [number, number];
  color?: string;
  waves?: Wave[];
}

export interface Obstacle {
  shape: "box" | "sphere" | "cylinder";
  center: Vec3;
  size?: Vec3;
  radius?: number;
  height?: number;
  rotation_deg?: Vec3;
  color?: string;
}

export interface TriangleMesh {
  /** Three corners (9 numbers) per triangle, world coordinates. */
  positions: number[];
  color?: string;
}

export interface Environment {
  terrain?: Heightfield;
  water?: Water;
  obstacles?: Obstacle[];
  meshes?: TriangleMesh[];
}

export interface SceneMessage {
  type: "scene";
  scenario: string;
  scenarios: string[];
  /** Each switchable scenario's one-line description (absent from older servers). */
  descriptions?: Record<string, string>;
  dt: number;
  species: SpeciesInfo[];
  world: { bounds_min: Vec3; bounds_max: Vec3 };
  environment: Environment | null;
  /** System-made populations streamed after the species (absent from older servers). */
  entities?: EntityInfo[];
  player: Record<string, boolean>;
  /** Present when the server replays a recording (`starling replay`): what the timeline draws. */
  replay?: ReplayInfo;
  /** The scenario's opening camera (null or absent: the viewer frames the animals). */
  view?: SceneView | null;
}

/** A scenario's composed first look: the orbit camera at `position`, looking at `target` (m). */
export interface SceneView {
  position: Vec3;
  target: Vec3;
}

/** One recorded event as the timeline marks it: `frame` is the first frame at or after its step. */
export interface ReplayEvent {
  frame: number;
  step: number;
  time: number;
  kind: string;
  species: string | null;
  uid: number | null;
}

export interface ReplayInfo {
  /** The recording's name as the user gave it. */
  file: string;
  n_frames: number;
  /** Simulation steps between recorded frames. */
  every: number;
  /** Every frame's step and time. */
  steps: number[];
  times: number[];
  events: ReplayEvent[];
}

export interface SpeciesMetrics {
  count?: number;
  polarization?: number | null;
  milling?: number | null;
  nn_distance?: number | null;
  [key: string]: number | null | undefined;
}

export interface StatusMessage {
  type: "status";
  scenario: string;
  loading: boolean;
  error: string | null;
  step: number;
  time: number;
  dt: number;
  paused: boolean;
  mode: "realtime" | "fast";
  speed: number;
  steps_per_s: number;
  frames_per_s: number;
  step_ms: number;
  encode_ms: number;
  metrics_ms: number;
  frame_bytes: number;
  counts: Record<string, number>;
  /** Animals per brain state, for species with a brain: species → state → count. */
  states?: Record<string, Record<string, number>>;
  metrics: Record<string, SpeciesMetrics>;
  /** Step and time at which `metrics` were computed (they refresh less often than the status). */
  metrics_step: number;
  metrics_time: number;
  /** Over each head of a small species: species → [uid, "Attacking · #1"] (its state, its rank). */
  labels?: Record<string, [number, string][]>;
  /** While loading: what is being done (e.g. compiling kernels) and how far along, 0–1. */
  loading_stage?: string | null;
  loading_progress?: number | null;
  /** Achieved simulated seconds per wall second over the requested speed (null: paused, fast or loading). */
  realtime_factor?: number | null;
  /** True once the simulation has fallen below real time for a while. */
  behind?: boolean;
  /** Replays only: milliseconds to read the shown frame from the recording. */
  read_ms?: number;
  /** Replays only: where the playhead is. */
  replay?: { file: string; frame: number; n_frames: number; playing: boolean };
}

export interface BehaviorResult {
  name: string;
  kind: string;
  direction: Vec3;
  direction_desire: number;
  speed: number;
  speed_desire: number;
  priority: number;
  /** This animal's own values of the parameters drawn per animal (individual variation). */
  drawn?: Record<string, number>;
}

export interface InspectMessage {
  type: "inspect";
  alive: boolean;
  species: string;
  uid: number;
  step?: number;
  position?: Vec3;
  velocity?: Vec3;
  speed?: number;
  state?: string | null;
  components?: Record<string, number | null>;
  neighbors?: { species: string; uid: number }[];
  behaviors?: BehaviorResult[];
  desired_velocity?: Vec3;
  fov_deg?: number;
  view_distance?: number;
}

export interface ErrorMessage {
  type: "error";
  message: string;
  field?: string;
}

export interface AckMessage {
  type: "ack";
  action: string;
  result?: unknown;
}

export interface PongMessage {
  type: "pong";
  id: number;
}

/** What happened since the last status: deaths with their cause (`dropped`: more than were told). */
export interface EventsMessage {
  type: "events";
  events: { kind: "death"; species: string; uid: number; cause: string | null; position: Vec3; time: number }[];
  dropped: number;
}

export type ServerMessage = SceneMessage | StatusMessage | InspectMessage | ErrorMessage | AckMessage | PongMessage
  | EventsMessage;

export type ClientMessage =
  | { type: "pause" }
  | { type: "resume" }
  | { type: "step"; n: number }
  | { type: "speed"; multiplier: number }
  | { type: "mode"; mode: "realtime" | "fast" }
  | { type: "select"; species: string; uid: number }
  | { type: "deselect" }
  | { type: "scenario"; name: string; seed?: number | null; paused?: boolean }
  | { type: "restart"; keep_edits: boolean }
  | { type: "fire"; origin: Vec3; direction: Vec3 }
  | { type: "throw_apple"; origin: Vec3; velocity: Vec3 }
  | { type: "move_player"; position: Vec3; direction?: Vec3 | null }
  | { type: "ping"; id: number }
  | { type: "seek"; frame: number }
  | { type: "next_event"; kind?: string | null }
  | { type: "prev_event"; kind?: string | null };
