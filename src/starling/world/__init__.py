"""World state: populations (struct-of-arrays), tags, clock and the command buffer."""
from .commands import CommandBuffer
from .journal import Journal
from .population import Population
from .world import Clock, World

__all__ = ["World", "Population", "CommandBuffer", "Clock", "Journal"]
