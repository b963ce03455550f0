"""The feeding system's rays straight down (the ground under an item, the grass under a grazer)
are cast without the public function's checks, into hits it keeps: the same hits as ``cast_rays``."""
import numpy as np

import starling
from starling.ecology.feeding import _DownRays
from starling.environment import cast_rays


def test_kept_down_rays_hit_what_cast_rays_hits_as_counts_reach_and_room_change():
    sim = starling.load_scenario("pasture", record_debug=False)
    env = sim.environment
    lo, hi = sim.world.bounds_min, sim.world.bounds_max
    rng = np.random.default_rng(3)
    rays = _DownRays()
    masks = [env.mask(None), env.mask([name for name in ("terrain", "ground") if name in env.layers])]
    hit_any = 0
    for k, reach in [(5, 40.0), (5, 40.0), (3, 2.5), (40, 40.0), (64, 8.0), (7, 40.0)]:
        origins, down = rays.take(k)
        origins[:] = rng.uniform(lo, hi, (k, 3)).astype(np.float32)
        origins[:, 1] = rng.uniform(lo[1], lo[1] + 6.0, k)
        for mask in masks:
            got = rays.cast(env, k, reach, mask)
            want = cast_rays(env, origins.copy(), down.copy(), reach, mask=mask)
            assert len(got) == k
            for field in ("hit", "distance", "point", "normal", "layer"):
                assert getattr(got, field).tobytes() == getattr(want, field).tobytes(), (k, reach, field)
            hit_any += int(want.hit.sum())
    assert hit_any  # the rays met the ground, so the hits compared are not only misses
