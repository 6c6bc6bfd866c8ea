"""The version of skfm, apart from the package face so that its modules can read it."""

__version__ = "0.1.0"
