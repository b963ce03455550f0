"""The showcase: sharks hunt the school, fish eat the player's apples, a shot scatters them."""
import json
import os
import subprocess
import sys
import tomllib

from starling.config import read_scenario_data, scenario_to_toml, validate_scenario


def test_starling_run_lagoon_shows_sharks_that_caught_fish_and_fish_that_took_bites():
    # the command itself, in its own process with one Numba thread (like a sweep worker):
    # a 200-fish scene gains nothing from threads, and a shared test machine loses a lot
    env = {**os.environ, "NUMBA_NUM_THREADS": "1"}
    result = subprocess.run(
        [sys.executable, "-c", "from starling.cli import app; app()", "run", "lagoon", "--steps", "3000", "--json"],
        capture_output=True, text=True, env=env, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    data = json.loads(result.stdout.strip().splitlines()[-1])
    fish, shark = data["species"]["fish"], data["species"]["shark"]
    assert shark["caught"] > 0 and shark["eaten"] >= shark["caught"]
    assert fish["eaten"] > 0
    assert fish["deaths"] >= shark["caught"]
    assert set(fish["states"]) == {"normal", "alone", "afraid"}
    assert set(shark["states"]) == {"chill", "hunting", "attacking"}
    assert sum(fish["states"].values()) == fish["alive"]
    assert set(data["health"].values()) == {0}  # nan, ecology_nan (and the environment's counters)


def test_lagoon_round_trips_through_toml():
    data, label = read_scenario_data("lagoon")
    original = validate_scenario(data, label)
    again = validate_scenario(tomllib.loads(scenario_to_toml(original)), label)
    assert again.model_dump() == original.model_dump()

