"""The ``skyjo-web`` server: a FastAPI app over the game sessions, hints and assistant.

`create_app` builds the app from `WebSettings`; ``agents.cli.web`` serves it with uvicorn.
The page (``static/``) is served at ``/``; the JSON API lives under ``/api/`` and is
documented in ``docs/web.md``. Every error is a 4xx (or 5xx when an agent fails) JSON
object ``{"error": {"field": ..., "message": ...}}`` naming the input at fault.

Work that takes time (loading networks, agents' moves, searches) runs in the thread pool,
so the server keeps answering other requests meanwhile; a game answers one request at a
time (409 while busy), searches run at most `WebSettings.max_searches` at once (429
beyond), and each hint's search stops after `WebSettings.hint_time_s`.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from fastapi import FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import FileResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException

from agents.evaluation.games import AgentActionError, agent_seed, set_torch_threads
from agents.evaluation.replays import Replay, ReplayError, play_back
from agents.registry import AgentSpecError, make_agent
from agents.web.assistant import TableError, table_state
from agents.web.games import GameError, GameSession, GameStore, SeatInfo
from agents.web.hints import HINT_SAMPLES, Hinter, odds
from agents.web.schemas import Move, NewGame, OpenReplay, Seek, Step, TableInput
from agents.web.specs import (
    FALLBACK_AGENT,
    SpecLimits,
    SpecPolicy,
    SpecRejected,
    default_network,
)
from skyjo_env.core import SkyjoRules, available_presets, legal_action_mask, load_rules
from skyjo_env.encoding import ObservationEncoder

STATIC_DIR = Path(__file__).resolve().parent / "static"
#: The shipped networks, beside the package in a source checkout.
DEFAULT_MODELS_DIR = Path(__file__).resolve().parents[2] / "models"
_GAME_ID = r"^[0-9a-f]{16}$"
#: An agent spec meaning "the default agent of this table" (`WebApp.default_spec`).
DEFAULT_SPEC = "default"
_REPLAY_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,150}\.json$")
#: Most replay files ``GET /api/replays`` lists.
MAX_REPLAY_LIST = 500


@dataclass(frozen=True)
class WebSettings:
    """How a server runs.

    Attributes:
        models_dir: Where ``ppo:NAME`` networks are read from (nothing else is loaded).
        replays_dir: Replay files the page can list and open, or None.
        allow_module_specs: Accept ``package.module:Class`` specs from requests.
        max_games: Most game sessions at once (idle ones are dropped when full).
        max_searches: Most hint searches at once.
        hint_time_s: Most search time per hint (checked between passes of samples).
        max_body_bytes: Largest request body.
        idle_s: Idle time after which a session may be dropped.
        limits: Bounds on the search options of request specs.
        torch_threads: torch intra-op threads (1: small networks gain nothing from more).
    """

    models_dir: Path = DEFAULT_MODELS_DIR
    replays_dir: Path | None = None
    allow_module_specs: bool = False
    max_games: int = 16
    max_searches: int = 2
    hint_time_s: float = 0.9
    max_body_bytes: int = 2_000_000
    idle_s: float = 1800.0
    limits: SpecLimits = field(default_factory=SpecLimits)
    torch_threads: int = 1


class ApiError(Exception):
    """An error answered as ``{"error": {"field", "message"}}`` with ``status``."""

    def __init__(self, status: int, message: str, field: str | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.field = field


def _error(status: int, message: str, field: str | None = None) -> JSONResponse:
    return JSONResponse({"error": {"field": field, "message": message}}, status_code=status)


class BodyLimit:
    """ASGI middleware: refuse request bodies over ``limit`` bytes with a 413."""

    def __init__(self, app, limit: int):
        self.app = app
        self.limit = limit

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            await _error(413, f"request body over {self.limit} bytes", "body")(scope, receive,
                                                                              send)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                break
            chunks.append(message.get("body", b""))
            size += len(chunks[-1])
            more = message.get("more_body", False)
            if size > self.limit:
                await _error(413, f"request body over {self.limit} bytes", "body")(
                    scope, receive, send)
                return
        body, sent = b"".join(chunks), False

        async def replay_receive():
            nonlocal sent
            if not sent:
                sent = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay_receive, send)


class WebApp:
    """The state behind the routes: settings, sessions, spec checks, hints."""

    def __init__(self, settings: WebSettings):
        self.settings = settings
        self.policy = SpecPolicy(Path(settings.models_dir), settings.allow_module_specs,
                                 settings.limits)
        self.store = GameStore(settings.max_games, settings.idle_s)
        self.hinter = Hinter(self.policy, settings.hint_time_s)
        self.searches = threading.BoundedSemaphore(settings.max_searches)
        self._fits: dict[tuple[str, SkyjoRules], bool] = {}
        self._networks: dict[tuple[str, SkyjoRules], Any] = {}
        self._networks_lock = threading.Lock()

    # --- rules and agents -------------------------------------------------------------

    def rules(self, preset: str, players: int, target_score: int | None = None,
              max_rounds: int | None = None, field: str = "rules") -> SkyjoRules:
        """The rules of a preset name, for ``players`` seats, with the overrides."""
        if preset not in available_presets():
            raise ApiError(400, f"unknown rules preset {preset!r}; available: "
                           f"{', '.join(available_presets())}", field)
        overrides: dict[str, Any] = {"num_players": players}
        if target_score is not None:
            overrides["target_score"] = target_score
        if max_rounds is not None:
            overrides["max_rounds"] = max_rounds
        try:
            return load_rules(preset, **overrides)
        except ValueError as error:
            raise ApiError(400, str(error), field) from None

    def default_spec(self, rules: SkyjoRules) -> tuple[str, str | None]:
        """The default agent of ``rules`` and, when it is not a network, why."""
        stem = default_network(rules.num_players)
        if stem is None:
            return FALLBACK_AGENT, (f"no network is shipped for {rules.num_players} players; "
                                    f"the default agent is {FALLBACK_AGENT}")
        if stem not in self.policy.networks():
            return FALLBACK_AGENT, (f"network {stem} is not in the model directory; the "
                                    f"default agent is {FALLBACK_AGENT}")
        if not self.network_fits(stem, rules):
            return FALLBACK_AGENT, (f"network {stem} was trained for other rules; the default "
                                    f"agent is {FALLBACK_AGENT}")
        return f"ppo:{stem}", None

    def network_fits(self, stem: str, rules: SkyjoRules) -> bool:
        """Whether network ``stem`` was trained for ``rules`` (its metadata only)."""
        key = (stem, rules)
        if key not in self._fits:
            from agents.ppo.checkpoint import CheckpointError, check_compatible, read_metadata

            path = self.policy.network_path(stem)
            try:
                check_compatible(read_metadata(path), rules, path)
                self._fits[key] = True
            except CheckpointError:
                self._fits[key] = False
        return self._fits[key]

    def build_agent(self, spec: str, rules: SkyjoRules, seed: int, field: str):
        """The agent of request spec ``spec``, or an `ApiError` naming ``field``.

        A plain network (``ppo:NAME``, greedy, no randomness of its own) is loaded once
        per rules and shared by the seats and games that name it.
        """
        try:
            resolved = self.policy.resolve(spec)
            if not resolved.startswith("ppo:"):
                return make_agent(resolved, rules, seed)
            key = (resolved, rules)
            with self._networks_lock:
                cached = self._networks.get(key)
            if cached is None:
                cached = make_agent(resolved, rules, seed)
                with self._networks_lock:
                    self._networks[key] = cached
                    while len(self._networks) > 8:
                        self._networks.pop(next(iter(self._networks)))
            return cached
        except (SpecRejected, AgentSpecError) as error:
            raise ApiError(400, str(error), field) from None

    # --- sessions ------------------------------------------------------------------------

    def new_game(self, body: NewGame) -> GameSession:
        """A session for ``POST /api/games`` (agents built, their first moves made)."""
        players = body.players
        rules = self.rules(body.rules, players, body.target_score, body.max_rounds)
        human = body.seat if body.mode == "play" else None
        if human is not None and body.seat >= players:
            raise ApiError(400, f"seat must be in 0..{players - 1}, got {body.seat}", "seat")
        agent_seats = [seat for seat in range(players) if seat != human]
        if len(body.agents) > len(agent_seats):
            raise ApiError(400, f"{len(body.agents)} agents for {len(agent_seats)} agent "
                           "seats", "agents")
        seed = body.seed if body.seed is not None else int(
            np.random.SeedSequence().entropy % 2**32)
        notices = []
        default, why = self.default_spec(rules)
        given = [spec.strip() for spec in body.agents]
        if why and (len(given) < len(agent_seats) or DEFAULT_SPEC in given):
            notices.append(why)
        seats = []
        for seat in range(players):
            if seat == human:
                seats.append(SeatInfo("human", "you", "you"))
                continue
            index = agent_seats.index(seat)
            spec = given[index] if index < len(given) else DEFAULT_SPEC
            if spec == DEFAULT_SPEC:
                spec = default
            agent = self.build_agent(spec, rules, agent_seed(seed, seat), f"agents[{index}]")
            seats.append(SeatInfo("agent", spec, agent.name, agent))
        set_torch_threads(self.settings.torch_threads)
        session = GameSession(self.store.new_id(), body.mode, rules, body.rules, seed, seats,
                              human_seat=human, notices=notices)
        if body.mode == "play":
            session.play_agents()
        return session

    def open_replay(self, body: OpenReplay) -> GameSession:
        """A replay session for ``POST /api/replays``."""
        if (body.name is None) == (body.replay is None):
            raise ApiError(400, "give either name (a file of GET /api/replays) or replay "
                           "(a replay object)", "name")
        if body.name is not None:
            data, source = self._replay_file(body.name), {"file": body.name}
        else:
            data, source = body.replay, {}
        try:
            replay = Replay.from_json(data)
            play_back(replay)
        except ReplayError as error:
            raise ApiError(400, str(error), "replay") from None
        seats = [SeatInfo("agent", spec, name) for name, spec in replay.seats]
        session = GameSession(self.store.new_id(), "replay", replay.rules, "replay",
                              replay.seed, seats, source={**replay.source, **source})
        session.actions = list(replay.actions)
        session.advance(len(replay.actions))  # records the moves and round results
        session.seek(0)
        return session

    def replay_files(self) -> list[dict[str, Any]]:
        """The replay files of the replay directory (name and size), sorted by name."""
        folder = self.settings.replays_dir
        if folder is None or not Path(folder).is_dir():
            return []
        files = sorted(p for p in Path(folder).glob("*.json")
                       if p.is_file() and _REPLAY_NAME.match(p.name))
        return [{"name": p.name, "bytes": p.stat().st_size} for p in files[:MAX_REPLAY_LIST]]

    def _replay_file(self, name: str) -> Any:
        folder = self.settings.replays_dir
        if folder is None:
            raise ApiError(404, "this server has no replay directory (start it with "
                           "--replays DIR)", "name")
        if not _REPLAY_NAME.match(name):
            raise ApiError(400, f"{name!r} is not a replay file name (NAME.json, no path)",
                           "name")
        root = Path(folder).resolve()
        path = (root / name).resolve()
        if path.parent != root or not path.is_file():
            raise ApiError(404, f"no replay {name!r} in the replay directory", "name")
        if path.stat().st_size > self.settings.max_body_bytes:
            raise ApiError(400, f"replay {name!r} is over {self.settings.max_body_bytes} "
                           "bytes", "name")
        try:
            return json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise ApiError(400, f"replay {name!r} is not valid JSON: {error}", "name") from None

    @contextmanager
    def using(self, session: GameSession):
        """Hold ``session`` for one request (409 when another request holds it)."""
        if not session.lock.acquire(blocking=False):
            raise ApiError(409, "this game is busy with another request; try again", "id")
        try:
            yield session
        finally:
            session.lock.release()

    # --- hints ---------------------------------------------------------------------------

    def search(self, rules: SkyjoRules, observation: np.ndarray, mask: np.ndarray
               ) -> dict[str, Any]:
        """`Hinter.analyse` under the search cap (429 when `max_searches` run)."""
        if not self.searches.acquire(blocking=False):
            raise ApiError(429, f"{self.settings.max_searches} searches are running; try "
                           "again in a moment", "hint")
        try:
            return self.hinter.analyse(rules, observation, mask)
        finally:
            self.searches.release()

    def decision(self, session: GameSession, seat: int | None) -> tuple[int, Any, Any, Any]:
        """The seat a hint or odds are for, with a copy of the game, its observation and
        legal actions (taken while holding the session)."""
        with self.using(session):
            if session.over:
                raise ApiError(409, "the game is over", "id")
            current = session.current_seat
            if session.mode == "play":
                if seat not in (None, session.human_seat):
                    raise ApiError(403, "in a play game you only see your own seat's odds",
                                   "seat")
                seat = session.human_seat
            elif seat is None:
                seat = current
            if not 0 <= seat < session.rules.num_players:
                raise ApiError(400, f"seat must be in 0..{session.rules.num_players - 1}",
                               "seat")
            state = session.state.copy()
            return seat, state, session.observation(seat), legal_action_mask(state)


def create_app(settings: WebSettings | None = None) -> FastAPI:
    """The ``skyjo-web`` application.

    Args:
        settings: How it runs (defaults: `WebSettings`).

    Returns:
        A FastAPI app (serve it with uvicorn, or test it with its ``TestClient``).
    """
    settings = settings or WebSettings()
    web = WebApp(settings)
    app = FastAPI(title="skyjo-web", version="1",
                  description="Play, watch and get hints for Skyjo (docs/web.md).")
    app.state.web = web
    app.add_middleware(BodyLimit, limit=settings.max_body_bytes)
    _add_error_handlers(app)
    app.mount("/static", StaticFiles(directory=STATIC_DIR), name="static")
    GameId = PathParam(pattern=_GAME_ID, description="a game id (16 hex digits)")

    @app.get("/", include_in_schema=False)
    def index():
        return FileResponse(STATIC_DIR / "index.html")

    @app.get("/api/info")
    def info() -> dict[str, Any]:
        """Presets, networks, default agents and limits (for the page's forms)."""
        defaults = {}
        for players in range(2, 9):
            stem = default_network(players)
            defaults[players] = (f"ppo:{stem}" if stem in web.policy.networks()
                                 else FALLBACK_AGENT)
        grids = {}
        for preset in available_presets():
            rules = load_rules(preset)
            grids[preset] = [rules.rows, rules.cols]
        return {
            "presets": available_presets(),
            "preset_grids": grids,
            "networks": web.policy.networks(),
            "builtin_agents": ["random", "greedy", "ev"],
            "default_agents": defaults,
            "allow_module_specs": settings.allow_module_specs,
            "limits": {"max_games": settings.max_games, "max_searches": settings.max_searches,
                       "hint_time_ms": round(1000 * settings.hint_time_s),
                       "hint_samples": HINT_SAMPLES,
                       "max_body_bytes": settings.max_body_bytes,
                       "search_samples": settings.limits.samples,
                       "search_depth": settings.limits.depth},
            "replays": settings.replays_dir is not None,
            "games": len(web.store),
        }

    @app.post("/api/games", status_code=201)
    async def new_game(body: NewGame) -> dict[str, Any]:
        """Start a game (play or watch); returns its view."""
        web.store.check_room()
        session = await run_in_threadpool(web.new_game, body)
        web.store.add(session)
        return session.view()

    @app.get("/api/games/{game_id}")
    def game(game_id: str = GameId, peek: bool = Query(False)) -> dict[str, Any]:
        """The game's view (``peek``: face-down cards too, watch and replay only)."""
        session = web.store.get(game_id)
        with web.using(session):
            return session.view(peek)

    @app.delete("/api/games/{game_id}")
    def delete_game(game_id: str = GameId) -> dict[str, Any]:
        """Forget a game."""
        web.store.remove(game_id)
        return {"deleted": game_id}

    @app.post("/api/games/{game_id}/moves")
    async def move(body: Move, game_id: str = GameId) -> dict[str, Any]:
        """Your move; the agents then play until your turn. Returns the view."""
        session = web.store.get(game_id)
        return await run_in_threadpool(_locked, web, session,
                                       lambda: session.human_move(body.action))

    @app.post("/api/games/{game_id}/step")
    async def step(body: Step, game_id: str = GameId,
                   peek: bool = Query(False)) -> dict[str, Any]:
        """Watch / replay: ``count`` decisions forward. Returns the view."""
        session = web.store.get(game_id)
        return await run_in_threadpool(_locked, web, session,
                                       lambda: session.advance(body.count), peek)

    @app.post("/api/games/{game_id}/seek")
    async def seek(body: Seek, game_id: str = GameId,
                   peek: bool = Query(False)) -> dict[str, Any]:
        """Watch / replay: go to move ``move`` (0 = the deal). Returns the view."""
        session = web.store.get(game_id)
        return await run_in_threadpool(_locked, web, session,
                                       lambda: session.seek(body.move), peek)

    @app.post("/api/games/{game_id}/hint")
    async def hint(game_id: str = GameId,
                   seat: int | None = Query(None, ge=0, lt=8)) -> dict[str, Any]:
        """Every legal move valued by the search, best first, and the odds panel."""
        session = web.store.get(game_id)
        seat, state, observation, mask = web.decision(session, seat)
        if seat != int(state.current_player[0]):
            raise ApiError(409, f"seat {seat} is not to act; hints are for the seat to act",
                           "seat")
        answer = await run_in_threadpool(web.search, state.rules, observation, mask)
        return {"seat": seat, "move": session.cursor, **answer, "odds": odds(state, seat)}

    @app.get("/api/games/{game_id}/odds")
    def game_odds(game_id: str = GameId,
                  seat: int | None = Query(None, ge=0, lt=8)) -> dict[str, Any]:
        """The odds panel for a seat (yours in play mode; default: the seat to act)."""
        session = web.store.get(game_id)
        seat, state, _, _ = web.decision(session, seat)
        return {"seat": seat, **odds(state, seat)}

    @app.get("/api/games/{game_id}/replay")
    def game_replay(game_id: str = GameId) -> dict[str, Any]:
        """The game's moves so far as a replay file (`agents.evaluation.replays`)."""
        session = web.store.get(game_id)
        with web.using(session):
            return session.to_replay().to_json()

    @app.post("/api/assistant")
    async def assistant(body: TableInput) -> dict[str, Any]:
        """The recommended move at a real table, with every move valued."""
        rules = web.rules(body.rules, len(body.others) + 1)
        try:
            state = table_state(rules, body)
        except TableError as error:
            raise ApiError(400, str(error), error.field) from None
        observation = ObservationEncoder(rules).encode(state, [0])
        answer = await run_in_threadpool(web.search, rules, observation,
                                         legal_action_mask(state))
        best = next(m for m in answer["moves"] if m["recommended"])
        return {**answer, "value": best["value"], "error": best["error"],
                "odds": odds(state, 0)}

    @app.get("/api/replays")
    def replays() -> dict[str, Any]:
        """The replay files of the server's replay directory."""
        return {"directory": settings.replays_dir is not None, "files": web.replay_files()}

    @app.post("/api/replays", status_code=201)
    async def open_replay(body: OpenReplay) -> dict[str, Any]:
        """Open a replay (a listed file or a posted replay object) to step through."""
        web.store.check_room()
        session = await run_in_threadpool(web.open_replay, body)
        web.store.add(session)
        return session.view()

    @app.api_route("/api/{rest:path}", methods=["GET", "POST", "PUT", "DELETE", "PATCH"],
                   include_in_schema=False)
    def unknown(rest: str):
        raise ApiError(404, f"no API endpoint /api/{rest}", "path")

    return app


def _locked(web: WebApp, session: GameSession, work: Callable[[], Any],
            peek: bool = False) -> dict[str, Any]:
    """Run ``work`` holding ``session``; returns its view."""
    with web.using(session):
        work()
        return session.view(peek)


_TYPE_TAG = re.compile(r"^(int|str|float|bool|dict|list|literal\[.*\]|function-.*)$")


def _field_name(location: Sequence[Any]) -> str:
    """``others.0.3`` from pydantic's error location (the body / query / path prefix and
    union member tags left out)."""
    parts = [str(part) for part in location]
    if parts and parts[0] in ("body", "query", "path"):
        parts = parts[1:]
    return ".".join(part for part in parts if not _TYPE_TAG.match(part)) or "body"


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def api_error(request: Request, error: ApiError):
        return _error(error.status, error.message, error.field)

    @app.exception_handler(GameError)
    async def game_error(request: Request, error: GameError):
        return _error(error.status, str(error), error.field)

    @app.exception_handler(AgentActionError)
    async def agent_error(request: Request, error: AgentActionError):
        return _error(500, str(error), "agents")

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, error: RequestValidationError):
        first = error.errors()[0] if error.errors() else {}
        name = _field_name(first.get("loc", ()))
        message = f"{name}: {first.get('msg', 'invalid request')}"
        return _error(422, message, name)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, error: StarletteHTTPException):
        return _error(error.status_code, str(error.detail), None)


__all__ = ["DEFAULT_MODELS_DIR", "WebSettings", "create_app"]
