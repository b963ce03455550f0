"""``python -m starling``: the command line (the same as the ``starling`` script)."""
from .cli import main

main()
