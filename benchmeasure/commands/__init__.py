"""One module per subcommand of ``benchmeasure`` (see :data:`benchmeasure.cli.COMMANDS`).

A command module parses its arguments, checks its input and output paths, calls the library and writes
its outputs; the logic itself lives in the library modules of :mod:`benchmeasure`.
"""
