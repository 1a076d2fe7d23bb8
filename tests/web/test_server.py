"""skyjo-web's JSON API through the framework's test client: every endpoint, every kind of
bad input (a 4xx JSON error naming the field)."""

from __future__ import annotations

import threading
import time

import pytest
from fastapi.testclient import TestClient

from agents.web.server import WebSettings, create_app
from agents.web.specs import DEFAULT_NETWORKS, SpecPolicy, SpecRejected
from skyjo_env.core import load_rules

QUICK = {"rules": "single_round", "agents": ["ev"]}  # one round against ev: a short game
NET_2P = f"ppo:{DEFAULT_NETWORKS[2]}"  # the default agents (the file names may change)
NET_4P = f"ppo:{DEFAULT_NETWORKS[4]}"


def new_game(client, **body):
    response = client.post("/api/games", json=body)
    assert response.status_code == 201, response.json()
    return response.json()


def error_of(response, status):
    assert response.status_code == status, response.json()
    return response.json()["error"]


def play_to_end(client, view, choose=lambda view: view["legal"][0]["action"]):
    moves = 0
    while not view["over"]:
        response = client.post(f"/api/games/{view['id']}/moves", json={"action": choose(view)})
        assert response.status_code == 200, response.json()
        view = response.json()
        moves += 1
        assert moves < 2000
    return view


# --- info, page --------------------------------------------------------------------------

def test_info__lists_presets_networks_and_the_default_agent_per_table_size(client):
    info = client.get("/api/info").json()
    assert "official" in info["presets"] and "single_round" in info["presets"]
    assert DEFAULT_NETWORKS[2] in info["networks"]
    assert info["default_agents"]["2"] == NET_2P
    assert info["default_agents"]["4"] == NET_4P
    assert info["default_agents"]["3"] == f"ppo:{DEFAULT_NETWORKS[3]}"
    assert info["default_agents"]["7"] == f"ppo:{DEFAULT_NETWORKS[7]}"
    assert info["default_agents"]["8"] == f"ppo:{DEFAULT_NETWORKS[8]}"
    assert info["allow_module_specs"] is False


def test_page__index_and_its_scripts_are_served(client):
    page = client.get("/")
    assert page.status_code == 200 and "app.js" in page.text
    assert client.get("/static/app.js").status_code == 200
    assert client.get("/static/style.css").status_code == 200


def test_unknown_endpoint__is_a_json_404(client):
    assert error_of(client.get("/api/nothing"), 404)["field"] == "path"


# --- play ----------------------------------------------------------------------------------

def test_play__default_opponent_is_the_strongest_network_for_two_players(client):
    view = new_game(client, players=2, seed=5)
    assert view["seats"][1]["spec"] == NET_2P
    assert view["seats"][0]["kind"] == "human" and view["your_turn"]
    assert view["phase"] == "initial_reveal" and view["legal"]
    assert view["notices"] == []


def test_play__eight_players_default_to_the_eight_player_network(client):
    view = new_game(client, players=8, seed=5)
    assert [s["spec"] for s in view["seats"][1:]] == [f"ppo:{DEFAULT_NETWORKS[8]}"] * 7
    assert view["notices"] == []


def test_play__a_table_size_without_a_shipped_network_falls_back_to_ev_and_says_so(
    client, monkeypatch
):
    import agents.web.server as server

    monkeypatch.setattr(server, "default_network", lambda players: None)
    view = new_game(client, players=8, seed=5)
    assert [s["spec"] for s in view["seats"][1:]] == ["ev"] * 7
    assert any("no network is shipped for 8 players" in line for line in view["notices"])


def test_play__the_spec_default_names_the_default_agent(client):
    view = new_game(client, players=4, seed=5, rules="official", agents=["default", "ev"])
    assert [s["spec"] for s in view["seats"][1:]] == [NET_4P, "ev", NET_4P]


def test_play__network_trained_for_other_rules_falls_back_to_ev(client):
    view = new_game(client, players=2, rules="single_round", seed=5)
    assert view["seats"][1]["spec"] == "ev"
    assert any("other rules" in line for line in view["notices"])


def test_play__a_whole_game_to_the_end_with_round_results_and_winners(client):
    view = play_to_end(client, new_game(client, seed=7, **QUICK))
    assert view["over"] and not view["your_turn"] and view["legal"] == []
    assert len(view["round_results"]) == 1
    result = view["round_results"][0]
    assert result["totals"] == [seat["total"] for seat in view["seats"]]
    assert all(cell["state"] != "hidden" for grid in result["grids"] for cell in grid)
    totals = [seat["total"] for seat in view["seats"]]
    assert view["winners"] == [i for i, t in enumerate(totals) if t == min(totals)]


def test_play__the_view_hides_face_down_cards_and_shows_every_seats_last_move(client):
    view = new_game(client, seed=11, **QUICK)
    for _ in range(6):
        view = client.post(f"/api/games/{view['id']}/moves",
                           json={"action": view["legal"][0]["action"]}).json()
    for seat in view["seats"]:
        assert all(cell["value"] is None for cell in seat["grid"] if cell["state"] == "hidden")
        assert seat["last_move"] is not None and seat["last_move"]["text"]
    assert view["moves"][-1]["index"] == view["cursor"] - 1


def test_play__the_person_can_sit_in_any_seat(client):
    view = new_game(client, players=3, seat=2, seed=3, rules="single_round",
                    agents=["greedy", "ev"])
    assert view["human_seat"] == 2 and view["seats"][2]["kind"] == "human"
    assert [s["spec"] for s in view["seats"][:2]] == ["greedy", "ev"]
    assert view["current_seat"] == 2


def test_move__an_illegal_action_is_refused_naming_the_reason(client):
    view = new_game(client, seed=2, **QUICK)
    legal = {entry["action"] for entry in view["legal"]}
    illegal = next(a for a in range(27) if a not in legal)
    error = error_of(client.post(f"/api/games/{view['id']}/moves", json={"action": illegal}),
                     400)
    assert error["field"] == "action" and "not legal" in error["message"]


@pytest.mark.parametrize("body, field", [
    ({"action": -1}, "action"),
    ({"action": 1000}, "action"),
    ({"action": "draw"}, "action"),
    ({}, "action"),
    ({"action": 1, "extra": 2}, "extra"),
])
def test_move__malformed_bodies_are_422_naming_the_field(client, body, field):
    view = new_game(client, seed=2, **QUICK)
    error = error_of(client.post(f"/api/games/{view['id']}/moves", json=body), 422)
    assert error["field"] == field


def test_move__after_the_game_is_over_is_a_409(client):
    view = play_to_end(client, new_game(client, seed=8, **QUICK))
    error = error_of(client.post(f"/api/games/{view['id']}/moves", json={"action": 0}), 409)
    assert "over" in error["message"]


def test_move__in_a_watched_game_is_a_409(client):
    view = new_game(client, mode="watch", rules="single_round", agents=["ev", "greedy"])
    assert error_of(client.post(f"/api/games/{view['id']}/moves", json={"action": 0}),
                    409)["field"] == "mode"


def test_move__while_the_game_is_busy_is_a_409(client, app):
    view = new_game(client, seed=2, **QUICK)
    session = app.state.web.store.get(view["id"])
    with session.lock:
        error = error_of(client.post(f"/api/games/{view['id']}/moves",
                                     json={"action": view["legal"][0]["action"]}), 409)
    assert "busy" in error["message"]


# --- game ids -------------------------------------------------------------------------------

def test_game_ids__unknown_is_404_and_malformed_is_422(client):
    assert error_of(client.get("/api/games/0123456789abcdef"), 404)["field"] == "id"
    assert error_of(client.get("/api/games/not-a-game-id"), 422)["field"] == "game_id"
    assert error_of(client.post("/api/games/XYZ/moves", json={"action": 1}),
                    422)["field"] == "game_id"


def test_delete__forgets_the_game(client):
    view = new_game(client, seed=1, **QUICK)
    assert client.delete(f"/api/games/{view['id']}").status_code == 200
    assert client.get(f"/api/games/{view['id']}").status_code == 404
    assert client.delete(f"/api/games/{view['id']}").status_code == 404


# --- new game: bad inputs ----------------------------------------------------------------------

@pytest.mark.parametrize("body, status, field", [
    ({"players": 9}, 422, "players"),
    ({"players": 1}, 422, "players"),
    ({"mode": "spectate"}, 422, "mode"),
    ({"seed": -1}, 422, "seed"),
    ({"rules": "no_such_preset"}, 400, "rules"),
    ({"rules": "../../etc/passwd"}, 400, "rules"),
    ({"rules": "x" * 65}, 422, "rules"),
    ({"target_score": 0}, 422, "target_score"),
    ({"players": 2, "seat": 2}, 400, "seat"),
    ({"players": 2, "agents": ["ev", "ev"]}, 400, "agents"),
    ({"agents": ["nonsense"]}, 400, "agents[0]"),
    ({"agents": [""]}, 422, "agents.0"),
    ({"agents": ["ppo:../secret"]}, 400, "agents[0]"),
    ({"agents": ["ppo:/etc/passwd"]}, 400, "agents[0]"),
    ({"agents": ["ppo:no_such_network"]}, 400, "agents[0]"),
    ({"agents": ["search:ppo:../../x.zip"]}, 400, "agents[0]"),
    ({"agents": ["agents.baselines.heuristics:EVAgent"]}, 400, "agents[0]"),
    ({"agents": ["search(samples=100000):ev"]}, 400, "agents[0]"),
    ({"agents": ["search(depth=1000):ev"]}, 400, "agents[0]"),
    ({"agents": ["search(bogus=1):ev"]}, 400, "agents[0]"),
    ({"agents": ["search:search:ev"]}, 400, "agents[0]"),
    ({"agents": ["search(samples=x):ev"]}, 400, "agents[0]"),
    ({"agents": ["a" * 301]}, 422, "agents.0"),
    ({"colour": "red"}, 422, "colour"),
])
def test_new_game__bad_inputs_get_a_4xx_naming_the_field(client, body, status, field):
    error = error_of(client.post("/api/games", json=body), status)
    assert error["field"] == field
    assert error["message"]


def test_new_game__a_body_that_is_not_json_is_a_422(client):
    response = client.post("/api/games", content=b"{not json",
                           headers={"content-type": "application/json"})
    assert response.status_code == 422 and "error" in response.json()


def test_new_game__a_body_over_the_size_limit_is_a_413(client):
    response = client.post("/api/games", content=b" " * 2_000_001,
                           headers={"content-type": "application/json"})
    assert error_of(response, 413)["field"] == "body"


def test_new_game__search_specs_over_named_networks_are_accepted(client):
    view = new_game(client, players=2, seed=3,
                    agents=[f"search(samples=8,depth=4,leaf=critic):{NET_2P}"])
    assert view["seats"][1]["name"].startswith("search:")


def test_new_game__module_specs_need_the_server_option():
    app = create_app(WebSettings(allow_module_specs=True))
    with TestClient(app) as client:
        view = new_game(client, seed=1, agents=["agents.baselines.heuristics:EVAgent"],
                        rules="single_round")
    assert view["seats"][1]["spec"] == "agents.baselines.heuristics:EVAgent"


def test_new_game__the_cap_on_games_answers_429():
    with TestClient(create_app(WebSettings(max_games=2))) as client:
        new_game(client, seed=1, **QUICK)
        new_game(client, seed=2, **QUICK)
        error = error_of(client.post("/api/games", json={"seed": 3, **QUICK}), 429)
    assert error["field"] == "games"


def test_spec_policy__networks_resolve_inside_the_model_directory_only(tmp_path):
    (tmp_path / "net.zip").write_bytes(b"")
    outside = tmp_path.parent / "outside.zip"
    outside.write_bytes(b"")
    (tmp_path / "link.zip").symlink_to(outside)
    policy = SpecPolicy(tmp_path)
    assert policy.resolve("ppo:net") == f"ppo:{tmp_path.resolve() / 'net.zip'}"
    assert policy.resolve("ppo:models/net.zip") == policy.resolve("ppo:net.zip")
    for spec in ("ppo:link", "ppo:../outside", "ppo:sub/net", "ppo:.hidden"):
        with pytest.raises(SpecRejected):
            policy.resolve(spec)


# --- watch -------------------------------------------------------------------------------------

def test_watch__step_and_seek_walk_the_game_both_ways(client):
    view = new_game(client, mode="watch", rules="single_round", agents=["ev", "greedy"],
                    seed=4)
    assert view["cursor"] == 0 and view["live"] and view["legal"] == []
    gid = view["id"]
    ahead = client.post(f"/api/games/{gid}/step", json={"count": 10}).json()
    assert ahead["cursor"] == 10 and ahead["known_moves"] == 10
    back = client.post(f"/api/games/{gid}/seek", json={"move": 3}).json()
    assert back["cursor"] == 3 and back["known_moves"] == 10
    assert back["moves"] == ahead["moves"][:3]
    again = client.post(f"/api/games/{gid}/step", json={"count": 7}).json()
    assert again["seats"] == ahead["seats"]
    end = client.post(f"/api/games/{gid}/step", json={"count": 1000}).json()
    assert end["over"] and len(end["round_results"]) == 1


def test_watch__peek_shows_face_down_cards(client):
    view = new_game(client, mode="watch", rules="single_round", agents=["ev", "ev"], seed=4)
    peeked = client.get(f"/api/games/{view['id']}?peek=true").json()
    hidden = [c for s in peeked["seats"] for c in s["grid"] if c["state"] == "hidden"]
    assert hidden and all(isinstance(c["value"], int) for c in hidden)


@pytest.mark.parametrize("path, body, status, field", [
    ("step", {"count": 0}, 422, "count"),
    ("step", {"count": 1001}, 422, "count"),
    ("seek", {"move": -1}, 422, "move"),
    ("seek", {"move": 5}, 400, "move"),
])
def test_watch__bad_step_and_seek_bodies(client, path, body, status, field):
    view = new_game(client, mode="watch", rules="single_round", agents=["ev", "ev"], seed=4)
    assert error_of(client.post(f"/api/games/{view['id']}/{path}", json=body),
                    status)["field"] == field


def test_step__in_a_play_game_is_a_409(client):
    view = new_game(client, seed=2, **QUICK)
    assert error_of(client.post(f"/api/games/{view['id']}/step", json={"count": 1}),
                    409)["field"] == "mode"
    assert error_of(client.post(f"/api/games/{view['id']}/seek", json={"move": 0}),
                    409)["field"] == "mode"


# --- hints and odds --------------------------------------------------------------------------

def _to_choose_source(client, view):
    while view["phase"] != "choose_source":
        view = client.post(f"/api/games/{view['id']}/moves",
                           json={"action": view["legal"][0]["action"]}).json()
    return view


def test_hint__every_legal_move_valued_best_first_with_network_probabilities(client):
    view = _to_choose_source(client, new_game(client, players=2, seed=9))
    hint = client.post(f"/api/games/{view['id']}/hint").json()
    assert {m["action"] for m in hint["moves"]} == {e["action"] for e in view["legal"]}
    values = [m["value"] for m in hint["moves"]]
    assert all(v is not None for v in values) and values == sorted(values, reverse=True)
    assert all(m["error"] >= 0 for m in hint["moves"])
    assert abs(sum(m["probability"] for m in hint["moves"]) - 1) < 1e-3
    assert hint["network"] and hint["base"] == NET_2P
    assert sum(m["recommended"] for m in hint["moves"]) == 1
    assert sum(m["network_choice"] for m in hint["moves"]) == 1
    assert 0 < hint["samples"] <= 128
    odds = hint["odds"]
    assert odds["unseen_total"] == sum(entry["count"] for entry in odds["unseen"])
    assert [entry["value"] for entry in odds["unseen"]] == list(range(-2, 13))
    assert 0 <= odds["p_draw_beats_discard"] <= 1 and len(odds["slots"]) == 12


def test_hint__over_ev_where_no_network_fits(client):
    view = _to_choose_source(client, new_game(client, seed=9, **QUICK))
    hint = client.post(f"/api/games/{view['id']}/hint").json()
    assert not hint["network"] and hint["base"] == "ev"
    assert all(m["probability"] is None and m["value"] is not None for m in hint["moves"])


def test_hint__initial_reveals_are_not_searched(client):
    view = new_game(client, seed=9, **QUICK)
    assert view["phase"] == "initial_reveal"
    hint = client.post(f"/api/games/{view['id']}/hint").json()
    assert not hint["searched"] and all(m["value"] is None for m in hint["moves"])
    assert sum(m["recommended"] for m in hint["moves"]) == 1


def test_hint__the_search_time_cap_stops_after_one_pass():
    with TestClient(create_app(WebSettings(hint_time_s=0.001))) as client:
        view = _to_choose_source(client, new_game(client, seed=9, **QUICK))
        hint = client.post(f"/api/games/{view['id']}/hint").json()
    assert hint["samples"] == 32


def test_hint__after_the_game_is_over_is_a_409(client):
    view = play_to_end(client, new_game(client, seed=8, **QUICK))
    assert error_of(client.post(f"/api/games/{view['id']}/hint"), 409)["field"] == "id"


def test_hint__in_a_watched_game_is_for_the_seat_to_act_only(client):
    view = new_game(client, mode="watch", rules="single_round", agents=["ev", "ev"], seed=4)
    view = client.post(f"/api/games/{view['id']}/step", json={"count": 4}).json()
    hint = client.post(f"/api/games/{view['id']}/hint").json()
    assert hint["seat"] == view["current_seat"]
    other = 1 - view["current_seat"]
    assert error_of(client.post(f"/api/games/{view['id']}/hint?seat={other}"),
                    409)["field"] == "seat"


def test_hint__more_searches_than_the_cap_answer_429(client, app):
    view = _to_choose_source(client, new_game(client, seed=9, **QUICK))
    semaphore = app.state.web.searches
    held = 0
    while semaphore.acquire(blocking=False):
        held += 1
    try:
        assert error_of(client.post(f"/api/games/{view['id']}/hint"), 429)["field"] == "hint"
    finally:
        for _ in range(held):
            semaphore.release()


def test_hint__the_server_answers_other_requests_while_a_search_runs(app, monkeypatch):
    hinter = app.state.web.hinter
    real = hinter.analyse

    def slow(*args, **kwargs):
        time.sleep(1.5)
        return real(*args, **kwargs)

    monkeypatch.setattr(hinter, "analyse", slow)
    with TestClient(app) as client:
        view = _to_choose_source(client, new_game(client, seed=9, **QUICK))
        done = {}
        worker = threading.Thread(target=lambda: done.setdefault(
            "hint", client.post(f"/api/games/{view['id']}/hint")))
        worker.start()
        time.sleep(0.3)
        started = time.perf_counter()
        assert client.get("/api/info").status_code == 200
        assert client.get(f"/api/games/{view['id']}").status_code == 200
        answered = time.perf_counter() - started
        worker.join()
    assert done["hint"].status_code == 200
    assert answered < 1.0


def test_odds__play_games_show_only_your_own_seat(client):
    view = new_game(client, seed=9, **QUICK)
    odds = client.get(f"/api/games/{view['id']}/odds").json()
    assert odds["seat"] == 0 and odds["mean_unseen"] is not None
    assert error_of(client.get(f"/api/games/{view['id']}/odds?seat=1"), 403)["field"] == "seat"
    assert error_of(client.get(f"/api/games/{view['id']}/odds?seat=9"), 422)["field"] == "seat"


# --- assistant ---------------------------------------------------------------------------------

def table(**changes):
    body = {
        "my_grid": [5, "?", "?", 3, "?", 10, "?", "?", "?", "?", "?", "?"],
        "others": [[1, "?", "?", "?", "?", 2, "?", "?", "?", "?", "?", "?"]],
        "discard_top": 0,
        "discard_below": [7, 12],
        "scores": [20, 31],
    }
    body.update(changes)
    return body


def test_assistant__recommends_a_move_with_value_and_error_bar(client):
    answer = client.post("/api/assistant", json=table()).json()
    assert answer["recommended"] in (12, 13)  # draw or take the discard
    assert answer["value"] is not None and answer["error"] is not None
    assert {m["action"] for m in answer["moves"]} == {12, 13}
    assert answer["odds"]["unseen_total"] == 150 - 3 - 2 - 3


def test_assistant__holding_a_drawn_card_offers_every_place_and_the_discard(client):
    answer = client.post("/api/assistant", json=table(phase="place_drawn",
                                                      drawn_card=-2)).json()
    assert len(answer["moves"]) == 13
    assert answer["odds"]["held_card"] == -2


def test_assistant__four_players_use_the_four_player_network(client):
    other = [1, "?", "?", "?", "?", 2, "?", "?", "?", "?", "?", "?"]
    answer = client.post("/api/assistant", json=table(others=[other] * 3,
                                                      scores=None)).json()
    assert answer["base"] == NET_4P


@pytest.mark.parametrize("changes, status, field", [
    ({"my_grid": [5, "?", "?"]}, 400, "my_grid"),
    ({"my_grid": [13, "?", "?", 3, "?", 10, "?", "?", "?", "?", "?", "?"]}, 400, "my_grid[0]"),
    ({"my_grid": ["z", "?", "?", 3, "?", 10, "?", "?", "?", "?", "?", "?"]}, 422, "my_grid.0"),
    ({"my_grid": [5, 5, 5, 3, 1, 10, 2, 2, 2, 4, 4, 4]}, 400, "my_grid"),
    ({"my_grid": ["x", "?", "?", 3, "?", 10, "?", "?", "?", "?", "?", "?"]}, 400, "my_grid[0]"),
    ({"others": [["?"] * 12]}, 400, "others[0]"),
    ({"others": [[1] * 12]}, 400, "finisher"),
    ({"finisher": 1}, 400, "finisher"),
    ({"finisher": 3}, 400, "finisher"),
    ({"others": []}, 422, "others"),
    ({"discard_top": 40}, 400, "discard_top"),
    ({"discard_below": [12] * 11}, 400, "cards"),
    ({"discard_below": [0] * 200}, 400, "cards"),
    ({"scores": [100, 0]}, 400, "scores[0]"),
    ({"scores": [1, 2, 3]}, 400, "scores"),
    ({"phase": "place_drawn"}, 400, "drawn_card"),
    ({"drawn_card": 4}, 400, "drawn_card"),
    ({"phase": "initial_reveal"}, 422, "phase"),
    ({"rules": "nope"}, 400, "rules"),
    ({"unknown": 1}, 422, "unknown"),
])
def test_assistant__tables_no_game_can_reach_are_refused_naming_the_field(
        client, changes, status, field):
    error = error_of(client.post("/api/assistant", json=table(**changes)), status)
    assert error["field"] == field


def test_assistant__whole_cleared_columns_are_accepted(client):
    grid = ["x", "?", "?", 3, "x", 10, "?", "?", "x", "?", "?", "?"]
    answer = client.post("/api/assistant", json=table(my_grid=grid, discard_below=[4, 4, 4]))
    assert answer.status_code == 200, answer.json()


# --- replays ---------------------------------------------------------------------------------

def test_replays__the_directory_is_listed(client):
    files = client.get("/api/replays").json()["files"]
    names = [f["name"] for f in files]
    assert "game-000000.json" in names and "broken.json" in names


def test_replays__a_listed_file_opens_and_steps_to_its_logged_end(client, replay_dir):
    view = client.post("/api/replays", json={"name": "game-000000.json"}).json()
    assert view["mode"] == "replay" and view["cursor"] == 0 and not view["live"]
    total = view["known_moves"]
    assert view["seats"][0]["name"] == "ev" and view["source"]["file"] == "game-000000.json"
    end = client.post(f"/api/games/{view['id']}/seek", json={"move": total}).json()
    assert end["over"] and end["cursor"] == total
    assert len(end["round_results"]) == 1 and end["moves"][-1]["index"] == total - 1
    assert all(seat["last_move"] is not None for seat in end["seats"])
    assert client.post(f"/api/games/{view['id']}/step", json={"count": 5}).json()["cursor"] == \
        total
    middle = client.post(f"/api/games/{view['id']}/seek", json={"move": total // 2}).json()
    assert middle["cursor"] == total // 2 and not middle["over"]


def test_replays__a_posted_replay_object_opens_too(client):
    game = play_to_end(client, new_game(client, seed=12, **QUICK))
    exported = client.get(f"/api/games/{game['id']}/replay").json()
    assert exported["totals"] == [s["total"] for s in game["seats"]]
    view = client.post("/api/replays", json={"replay": exported}).json()
    end = client.post(f"/api/games/{view['id']}/seek", json={"move": view["known_moves"]}).json()
    assert [s["total"] for s in end["seats"]] == exported["totals"]


@pytest.mark.parametrize("body, status, field", [
    ({"name": "../secret.json"}, 400, "name"),
    ({"name": "/etc/passwd"}, 400, "name"),
    ({"name": "missing.json"}, 404, "name"),
    ({"name": "broken.json"}, 400, "replay"),
    ({}, 400, "name"),
    ({"name": "game-000000.json", "replay": {}}, 400, "name"),
    ({"replay": {"format": "other"}}, 400, "replay"),
])
def test_replays__bad_requests_are_refused_naming_the_field(client, body, status, field):
    assert error_of(client.post("/api/replays", json=body), status)["field"] == field


def test_replays__an_illegal_logged_action_is_refused_naming_its_index(client):
    game = new_game(client, mode="watch", rules="single_round", agents=["ev", "ev"], seed=3)
    client.post(f"/api/games/{game['id']}/step", json={"count": 1000})
    exported = client.get(f"/api/games/{game['id']}/replay").json()
    exported["actions"][5] = 99
    error = error_of(client.post("/api/replays", json={"replay": exported}), 400)
    assert "actions[5]" in error["message"]


def test_replays__without_a_replay_directory_names_are_404():
    with TestClient(create_app(WebSettings())) as client:
        assert client.get("/api/replays").json() == {"directory": False, "files": []}
        assert error_of(client.post("/api/replays", json={"name": "a.json"}),
                        404)["field"] == "name"


def test_rules__overrides_shorten_the_game(client):
    view = new_game(client, agents=["ev"], max_rounds=1, target_score=50, seed=1)
    assert view["rules"]["max_rounds"] == 1 and view["rules"]["target_score"] == 50
    assert load_rules("official").max_rounds is None


def test_games__idle_ones_make_room_for_new_ones():
    app = create_app(WebSettings(max_games=1, idle_s=0.0))
    with TestClient(app) as client:
        first = new_game(client, seed=1, **QUICK)
        second = new_game(client, seed=2, **QUICK)
        assert client.get(f"/api/games/{first['id']}").status_code == 404
        assert client.get(f"/api/games/{second['id']}").status_code == 200
