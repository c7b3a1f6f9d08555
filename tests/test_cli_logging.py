"""The command line's one logging handler (benchmeasure/cli.py): library warnings reach stderr once."""

from __future__ import annotations

import logging

from benchmeasure.cli import setup_logging


def test_one_handler_warnings_as_lines(capsys):
    first = setup_logging()
    assert setup_logging() is first  # a second command in the same process adds none
    logging.getLogger("benchmeasure.some.module").warning("the matrix has %d constant items", 3)
    logging.getLogger("benchmeasure.some.module").info("progress is not shown unless a command asks")
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == "warning: the matrix has 3 constant items"
    assert "progress is not shown" not in err
