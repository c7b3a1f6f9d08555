"""``python -m benchmeasure SUBCOMMAND …`` = ``benchmeasure SUBCOMMAND …``."""

from benchmeasure.cli import main

main()
