"""Evaluation: full games between agents over duplicated, seat-rotated deals (`games`),
the statistics over them (`statistics`), tournament results (`tournament`) and their
text, JSON, CSV and plot reports (`report`)."""
