import * as THREE from "three";

/** The shared light, fog and water uniforms a World hands to layers and scenery (zeroed). */
export const lights = () => ({
  uSunView: { value: new THREE.Vector3() }, uUpView: { value: new THREE.Vector3() },
  uSunColor: { value: new THREE.Color() }, uSkyColor: { value: new THREE.Color() },
  uGroundColor: { value: new THREE.Color() }, uFogColor: { value: new THREE.Color() },
  uFogNear: { value: 1 }, uFogFar: { value: 2 },
  uWaterOn: { value: 0 }, uWaterLevel: { value: 0 }, uWaterColor: { value: new THREE.Color() }, uWaterRect: { value: new THREE.Vector4() },
});
