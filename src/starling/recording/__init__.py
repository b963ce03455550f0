"""Recording a run and reading it back (``docs/recording.md``).

:class:`Recorder` is an observer that writes a Zarr v3 store as the run goes;
:func:`open_recording` reads one back as NumPy arrays, tracks and events.
"""
from .reader import PopulationFrame, Recording, RecordingError, open_recording
from .writer import Recorder, record

__all__ = ["Recorder", "record", "open_recording", "Recording", "RecordingError", "PopulationFrame"]
