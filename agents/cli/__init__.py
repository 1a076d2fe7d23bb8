"""Command lines: ``skyjo-evaluate`` (`evaluate`), ``skyjo-train`` (`train`) and
``skyjo-play`` (`play`); each parses its arguments and calls one library function."""

#: Exit code after Ctrl-C (128 + SIGINT), as a shell reports it; every command uses it.
EXIT_INTERRUPTED = 130
