"""Progress lines through :mod:`logging`, shown by the command line.

Library modules log progress with ``logging.getLogger(__name__).info(...)`` and never print; a
command's ``main`` calls :func:`show_progress` once for the loggers whose progress it shows, so
the screen shows the bare message, as a ``print`` would (and a library used from Python shows
nothing unless its caller sets up logging). Standard library only.
"""

from __future__ import annotations

import logging
import sys

_MARK = "_benchmeasure_progress"


def show_progress(name: str, stream=None, level: int = logging.INFO) -> logging.Logger:
    """Send the ``name`` logger's records at ``level`` and above to ``stream`` (default stdout) as bare lines.

    Idempotent: a second call replaces the handler it added before, so progress is never doubled.
    """
    logger = logging.getLogger(name)
    for handler in [h for h in logger.handlers if getattr(h, _MARK, False)]:
        logger.removeHandler(handler)
    handler = logging.StreamHandler(sys.stdout if stream is None else stream)
    handler.setFormatter(logging.Formatter("%(message)s"))
    setattr(handler, _MARK, True)
    logger.addHandler(handler)
    logger.setLevel(level)
    logger.propagate = False
    return logger
