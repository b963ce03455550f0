"""Food, bites and catches (thesis 11.1.4–11.1.5, 11.2.3–11.2.4).

Anything with a ``food`` component (how much is left) and a ``nutrition`` component (how
much a unit of it is worth) is food: apples, carcasses, and any species configured with
``[species.ecology.food]`` (fish are food for sharks). An eater has a mouth; after every
step each eater that is not chewing and is hungry enough looks for food within ``reach``
of its mouth:

* **prey** (living animals it hunts) is *caught*: the prey dies, the eater counts a
  catch and takes one bite of it; what is left of the prey becomes its carcass if its
  species has one configured;
* **food** items are *bitten*: a bite takes ``min(bite, food left)``; an item whose food
  reaches zero disappears (a living animal eaten up dies).

Grazers (``graze``) bite the grass layer of the environment under them while they stand
nearly still (the ``find_grass`` ray behaviour brings them there and slows them down).

A bite lowers the eater's hunger by ``amount · nutrition · satiation`` and starts
``chew_time`` seconds of chewing, during which it does not bite again and
``avoid_when_eating`` keeps it away from its fellows. Bites are resolved in a fixed
order (species, then row), so the outcome does not depend on thread count.
"""
from typing import Literal, Optional

from pydantic import Field

from ..steering.params import StrictModel
from .variation import num


class EatingConfig(StrictModel):
    """What this species eats and how it bites."""

    food: list[str] = Field(default_factory=list,
                            description="Populations bitten as food (e.g. 'apple', 'carcass', a species with body food).")
    food_tags: list[str] = Field(default_factory=list, description="Only food items carrying one of these tags.")
    prey: list[str] = Field(default_factory=list, description="Species caught (killed) on contact with the mouth.")
    bite: num(gt=0) = Field(0.2, description="Food taken by one bite, food units.")
    chew_time: num(ge=0) = Field(1.0, description="Seconds of chewing after a bite (no new bites meanwhile).")
    min_hunger: num(ge=0, le=1) = Field(0.0, description="Does not eat unless at least this hungry.")


class GrazeConfig(StrictModel):
    """Eating grass (thesis 11.2.7): an animal slow enough over the grass layer bites it.

    Needs an ``[environment]`` with shapes on the grass layer. A bite uses the ``eating``
    table's ``bite``, ``chew_time`` and ``min_hunger``; grass never runs out.
    """

    layers: list[str] = Field(default_factory=lambda: ["grass"], description="Layers that count as grass.")
    reach: float = Field(1.5, gt=0, description="Grass at most this far below the animal's centre is reachable, m.")
    max_speed: float = Field(0.5, ge=0, description="Only an animal this slow grazes, m/s.")
    nutrition: num(ge=0) = Field(0.5, description="Worth of one unit of grass.")


class BodyFoodConfig(StrictModel):
    """This species as food: what a bite of one of its animals is worth."""

    amount: num(gt=0) = Field(1.0, description="Food in one animal, food units.")
    nutrition: num(ge=0) = Field(1.0, description="Worth of one unit of it.")


class CarcassConfig(StrictModel):
    """What a dead animal leaves behind (thesis 11.1.2: shot animals fall; 11.3.1: dead sharks are food)."""

    tag: Optional[str] = Field(None, description="Tag of the carcass (default 'dead_<species>').")
    food: Optional[num(ge=0)] = Field(None, description="Food in the carcass (default: the body food amount, or 1).")
    buoyancy: Literal["float", "sink"] = Field("sink", description="Floats at the water surface or sinks to the ground.")
    lifetime: Optional[float] = Field(None, gt=0, description="Seconds until it is gone (none: until eaten).")


def bite_amount(food_left: float, bite: float) -> float:
    """A bite never takes more than is left."""
    return float(min(max(food_left, 0.0), bite))
