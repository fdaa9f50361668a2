"""The package's exception classes, plain Python so that the engine plugins and code that only catches them never
load the extension; arfit._core raises them (its exception translator looks them up here)."""


class ArfitError(Exception):
    """An error arfit reports: the message is the command line's (without its 'arfit: error:' prefix)."""
    exit_code = 1


class UsageError(ArfitError, ValueError):
    """A bad argument or option: what `arfit` exits 2 for."""
    exit_code = 2


class DataError(ArfitError):
    """Bad input data or a failed run: what `arfit` exits 1 for."""
    exit_code = 1
