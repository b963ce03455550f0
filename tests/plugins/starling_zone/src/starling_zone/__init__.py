"""The tutorial behaviour of docs/extending.md as an installable plugin."""
