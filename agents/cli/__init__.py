"""Command lines: ``skyjo-evaluate`` (`evaluate`), ``skyjo-train`` (`train`) and
``skyjo-play`` (`play`); each parses its arguments and calls one library function."""
