"""The shipped behaviours. Importing this package registers all of them."""
from . import simple  # noqa: F401
from . import neighbor  # noqa: F401
from . import ray  # noqa: F401
from . import savannah  # noqa: F401
