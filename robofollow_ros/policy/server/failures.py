"""One line saying why a request failed, for the error frame a server sends back."""

from __future__ import annotations

from robofollow_ros.errors import RoboFollowError


def describe_failure(error: BaseException) -> str:
    """Our own errors as they are; anything a served policy raised, named with its type."""
    if isinstance(error, RoboFollowError):
        return str(error)
    return f'policy raised {type(error).__name__}: {error}'


def exception_line(error: BaseException) -> str:
    """``Type: message``, the last line of a traceback without the frames (no paths, no source)."""
    return f'{type(error).__name__}: {error}'
