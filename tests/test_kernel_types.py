"""Kernel tuple types survive pickling by name, even in a process that never built them."""
import pickle
import subprocess
import sys

import pytest

from starling.kernel_types import type_name
from starling.steering.behaviors.simple.wandering import WanderingParams
from starling.world.population import agent_tuple_type


def test_parameter_and_agent_types_pickle_by_reference():
    kp = type(WanderingParams().kernel_params())
    agents = agent_tuple_type(["energy", "hunger"])
    assert pickle.loads(pickle.dumps(kp)) is kp
    assert pickle.loads(pickle.dumps(agents)) is agents
    assert agents.__name__ == "Agents__energy__hunger"


def test_a_fresh_process_can_resolve_a_type_it_never_built():
    kernel = type(WanderingParams().kernel_params())
    blob = pickle.dumps((agent_tuple_type(["zz_only_here"]), kernel))
    code = "import pickle, sys; a, k = pickle.loads(sys.stdin.buffer.read()); print(a._fields[-1], ','.join(k._fields))"
    out = subprocess.run([sys.executable, "-c", code], input=blob, capture_output=True, check=True)
    assert out.stdout.decode().split() == ["zz_only_here", ",".join(kernel._fields)]


def test_field_names_that_cannot_be_encoded_are_refused():
    with pytest.raises(ValueError, match="cannot be a kernel field name"):
        type_name("Agents", ["bad__name"])
