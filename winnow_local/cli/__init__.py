"""The ``winnow`` command, split by subcommand; ``main`` is the console script's entry point."""
