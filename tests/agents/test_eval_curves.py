"""Learning curves (`agents.evaluation.curves`): an ``eval.jsonl`` read line by line with
every field checked, stage starts found, and the chart drawn."""

from __future__ import annotations

import json

import pytest

from agents.evaluation.curves import (
    MAX_EVAL_LOG_BYTES,
    EvalLogError,
    read_eval_log,
    render_curves,
    stage_starts,
)


def _line(steps: int, rate: float, stage: str | None = "grid", opponent: str = "ev") -> str:
    record = {"timesteps": steps, "score": rate,
              "results": {opponent: {"win_rate": rate, "win_rate_ci": [rate - 0.05, rate + 0.05],
                                     "mean_round_score": 12.0, "mean_total": 80.0}},
              "seconds": 3.9}
    if stage is not None:
        record["stage"] = stage
    return json.dumps(record)


def _write(tmp_path, lines: list[str]):
    path = tmp_path / "eval.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_read_eval_log__reads_every_line_from_the_file_or_its_run_directory(tmp_path):
    _write(tmp_path, [_line(1000, 0.4), "", _line(2000, 0.55, "feeding")])
    from_dir, from_file = read_eval_log(tmp_path), read_eval_log(tmp_path / "eval.jsonl")
    assert from_dir == from_file
    assert [(e.timesteps, e.stage) for e in from_dir] == [(1000, "grid"), (2000, "feeding")]
    assert from_dir[1].win_rates == {"ev": pytest.approx((0.55, 0.5, 0.6))}


def test_stage_starts__a_stage_starts_at_the_last_evaluation_before_its_first(tmp_path):
    staged = read_eval_log(_write(tmp_path, [
        _line(1, 0.1), _line(2, 0.2), _line(3, 0.3, "feeding"), _line(4, 0.3, "feeding"),
        _line(5, 0.4, "finetune")]))
    assert stage_starts(staged) == [(0, "grid"), (2, "feeding"), (4, "finetune")]
    assert stage_starts(read_eval_log(_write(tmp_path, [_line(1, 0.1, None)]))) == []


@pytest.mark.parametrize("bad, words", [
    ("{not json", "line 2 is not JSON"),
    ("[1, 2]", "line 2 is not a JSON object"),
    (json.dumps({"timesteps": -5, "results": {}}), "line 2: timesteps must be an int >= 0"),
    (json.dumps({"timesteps": True, "results": {}}), "timesteps must be an int"),
    (json.dumps({"timesteps": 5, "stage": 3, "results": {"ev": {}}}), "stage must be a name"),
    (json.dumps({"timesteps": 5, "results": {}}), "results must map opponents"),
    (json.dumps({"timesteps": 5, "results": {"ev": 0.5}}), "results['ev'] is not a JSON object"),
    (json.dumps({"timesteps": 5, "results": {"ev": {"win_rate": 1.5, "win_rate_ci": [0, 1]}}}),
     "win_rate and win_rate_ci [low, high] must be numbers in 0..1"),
    (json.dumps({"timesteps": 5, "results": {"ev": {"win_rate": 0.5, "win_rate_ci": [0]}}}),
     "must be numbers in 0..1"),
    ("[" * 100_000, "line 2 is not JSON"),
])
def test_read_eval_log__a_damaged_line_is_an_error_naming_the_line_and_field(tmp_path, bad, words):
    path = _write(tmp_path, [_line(1000, 0.4), bad])
    with pytest.raises(EvalLogError) as caught:
        read_eval_log(path)
    message = str(caught.value)
    assert str(path) in message and words in message
    assert "\n" not in message and len(message) < 400


def test_read_eval_log__missing_empty_binary_and_oversized_files_are_errors(tmp_path):
    with pytest.raises(EvalLogError, match="cannot read"):
        read_eval_log(tmp_path / "nowhere.jsonl")
    with pytest.raises(EvalLogError, match="holds no evaluation"):
        read_eval_log(_write(tmp_path, [""]))
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(EvalLogError, match="cannot read"):
        read_eval_log(binary)
    huge = tmp_path / "huge.jsonl"
    with huge.open("wb") as handle:  # sparse: the size is checked before any read
        handle.truncate(MAX_EVAL_LOG_BYTES + 1)
    with pytest.raises(EvalLogError, match="bytes; an eval.jsonl is at most"):
        read_eval_log(huge)


def test_render_curves__draws_a_png_for_one_or_several_runs(tmp_path):
    one = read_eval_log(_write(tmp_path, [_line(10**6, 0.4), _line(2 * 10**6, 0.6, "feeding")]))
    for runs in ({"a": one}, {"a": one, "b": one[:1]}):
        png = render_curves(runs, parity=1 / 3, title="3 players")
        assert png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5000
