"""``python -m benchmeasure SUBCOMMAND …`` = ``benchmeasure SUBCOMMAND …``."""

from benchmeasure.base.interrupt import exit_on_interrupt

exit_on_interrupt()  # first: Ctrl-C while the package imports exits 130 at once (benchmeasure/base/interrupt.py)

from benchmeasure.cli import main  # noqa: E402

main()
