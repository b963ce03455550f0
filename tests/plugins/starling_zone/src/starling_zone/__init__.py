"""The tutorial behaviour of docs/extending.md as an installable plugin.

Its module ``avoid_zone.py`` is the tutorial's own file, copied in by
``tests/test_plugins.py`` before it installs the package (one source for both).
"""
