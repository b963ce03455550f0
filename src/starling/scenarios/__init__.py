"""Built-in scenarios: ``*.toml`` files in this package, listed by ``starling scenarios``."""
