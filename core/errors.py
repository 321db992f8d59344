"""The one exception the core raises for bad input or impossible settings."""


class VoxNavError(ValueError):
    """Bad input or settings; the message says what is wrong, where, and what to change."""


class UsageError(VoxNavError):
    """A bad command-line flag or setting value: the command lines exit with code 2 for it."""
