"""``flock`` murmurates: one group within 30 s, ordered, wheeling, never colliding — for four seeds
(19: two streams of the flock meet head-on; before `avoid_collisions` its closest pair came 0.68 m apart)."""
import pytest

from starling.experiments.murmuration import TARGETS, main, measure

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("seed", [1, 2, 3, 19])
def test_the_flock_is_one_ordered_wheeling_flock_without_collisions(seed):
    r = measure("flock", seed)
    assert r.largest_group_at_30s >= TARGETS["largest_group"], r
    assert r.polarization_30_60s >= TARGETS["polarization"], r
    assert r.turning_deg > TARGETS["turning_deg"], r
    assert r.min_distance >= r.separation / 2, r
    assert r.passed


def test_the_old_thesis_defaults_do_not_murmurate():
    # the measure can fail: with the thesis' separation curve (sep_k 0.01 barely acts beyond
    # a few tens of centimetres), nearest-dominated cohesion and no avoidance of what is coming
    # (the thesis has none) the birds clump into cliques
    r = measure("flock", 1, seconds=30, overrides=[
        "species.bird.groups.flocking.behaviors.avoid_collisions.enabled=false",
        "species.bird.groups.flocking.behaviors.separation.sep_k=0.01",
        "species.bird.groups.flocking.behaviors.cohesion.distance_power=2.0",
        "species.bird.groups.flocking.query.max_distance=5.0",
    ])
    assert not r.passed
    assert r.largest_group_at_30s < 0.5 and r.min_distance < r.separation / 2, r


def test_the_command_reports_a_table_and_rejects_a_bad_setting(capsys):
    assert main(["--seeds", "1", "--seconds", "30", "--set", "species.bird.count=200"]) in (0, 1)
    out = capsys.readouterr().out
    assert "largest@30s" in out and "closest / separation" in out
    assert main(["--seeds", "1", "--seconds", "30", "--set", "species.bird.count=-1"]) == 2
    assert "species.bird.count" in capsys.readouterr().err
