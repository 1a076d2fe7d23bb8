"""``skyjo-web``: play, watch and get hints in the browser.

    skyjo-web                              # http://127.0.0.1:8000/
    skyjo-web --port 8080 --replays replays/

Starts a local web server (FastAPI on uvicorn, `agents.web.server`) serving one page and
the JSON API under ``/api/`` (``docs/web.md``), and prints the URL. It binds to the
loopback address unless ``--host`` says otherwise. Exit status 2 for a bad argument
(one line on stderr), 0 after Ctrl-C.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

PROG = "skyjo-web"
EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    """The argument parser."""
    from agents.web.server import DEFAULT_MODELS_DIR, WebSettings

    defaults = WebSettings()
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1",
                        help="address to bind (default 127.0.0.1: this machine only)")
    parser.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    parser.add_argument("--models-dir", type=Path, default=DEFAULT_MODELS_DIR,
                        help="the only directory ppo:NAME networks are loaded from "
                        f"(default {DEFAULT_MODELS_DIR})")
    parser.add_argument("--replays", type=Path, metavar="DIR",
                        help="replay files (evaluate.py --replays DIR) the page can open")
    parser.add_argument("--allow-module-specs", action="store_true",
                        help="accept package.module:Class agent specs from the page (runs "
                        "code named by a request: only on a trusted machine)")
    parser.add_argument("--max-games", type=int, default=defaults.max_games,
                        help=f"most games held at once (default {defaults.max_games})")
    parser.add_argument("--hint-ms", type=int, default=round(1000 * defaults.hint_time_s),
                        help="most search time per hint in ms (default "
                        f"{round(1000 * defaults.hint_time_s)})")
    return parser


def _fail(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return EXIT_USAGE


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server until Ctrl-C; returns the exit status."""
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    if not 0 < args.port < 65536:
        return _fail(f"--port must be in 1..65535, got {args.port}")
    if not args.models_dir.is_dir():
        return _fail(f"--models-dir {str(args.models_dir)!r} is not a directory")
    if args.replays is not None and not args.replays.is_dir():
        return _fail(f"--replays {str(args.replays)!r} is not a directory")
    if args.max_games < 1:
        return _fail(f"--max-games must be >= 1, got {args.max_games}")
    if args.hint_ms < 10:
        return _fail(f"--hint-ms must be >= 10, got {args.hint_ms}")
    import uvicorn

    from agents.web.server import WebSettings, create_app

    settings = WebSettings(models_dir=args.models_dir, replays_dir=args.replays,
                           allow_module_specs=args.allow_module_specs,
                           max_games=args.max_games, hint_time_s=args.hint_ms / 1000)
    app = create_app(settings)
    shown = f"[{args.host}]" if ":" in args.host else args.host
    print(f"skyjo-web: open http://{shown}:{args.port}/ (Ctrl-C stops)", flush=True)
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(f"skyjo-web: warning: listening on {args.host}, reachable from other machines",
              file=sys.stderr)
    try:
        uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
