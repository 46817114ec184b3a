"""The package version, in one place.

``setup.cfg`` reads it from here, and files the package writes record
it."""

__version__ = "0.1.0"
