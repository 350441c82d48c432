"""Reading an RFT job's own curves from its outputMetrics (core/rft/job_metrics.py): the shapes it accepts, the
names it maps, and what it refuses quietly (the field's content is not documented: docs/rft.md)."""

from __future__ import annotations

import json

from svgagent.core.rft.job_metrics import (
    EVAL_REWARD,
    LOSS,
    MAX_POINTS,
    REWARD,
    JobCurves,
    curves_line,
    job_curves,
    parse_output_metrics,
)
from svgagent.core.rft.monitor import JobView


def test_rows_per_step_as_the_simulator_serves_them() -> None:
    text = json.dumps(
        {
            "steps": [
                {"step": 2, "epoch": 0, "reward": 0.5, "loss": 0.2, "eval_reward": 0.45},
                {"step": 1, "epoch": 0, "reward": 0.4, "loss": 0.25},
                {"step": 3, "epoch": 1, "train/reward": "0.7", "kl": 0.01},
            ]
        }
    )
    curves = parse_output_metrics(text)
    assert curves.series[REWARD] == ((1, 0.4), (2, 0.5), (3, 0.7))  # in step order, aliases and numeric text read
    assert curves.series[LOSS] == ((1, 0.25), (2, 0.2))
    assert curves.series[EVAL_REWARD] == ((2, 0.45),)
    assert curves.series["kl"] == ((3, 0.01),)
    assert "epoch" not in curves.series
    assert curves.names() == [REWARD, LOSS, EVAL_REWARD, "kl"]
    assert curves.last(REWARD) == 0.7
    assert curves_line(curves) == "reward 0.4 → 0.7 · loss 0.25 → 0.2 · eval reward 0.45 · kl 0.01 (3 steps)"


def test_series_per_metric_and_final_values() -> None:
    curves = parse_output_metrics(
        json.dumps(
            {
                "Mean_Reward": [0.1, 0.2, 0.3],
                "Train Loss": [[10, 1.0], [20, 0.5]],
                "evalReward": [{"step": 5, "value": 0.6}],
                "final score": 0.9,
                "accuracy": 0.8,
            }
        )
    )
    assert curves.series[REWARD] == ((1, 0.1), (2, 0.2), (3, 0.3))
    assert curves.series[LOSS] == ((10, 1.0), (20, 0.5))
    assert curves.series[EVAL_REWARD] == ((5, 0.6),)
    assert curves.finals == {"final_score": 0.9, "accuracy": 0.8}
    assert curves.last("accuracy") == 0.8
    finals_only = parse_output_metrics('{"reward": 0.61}')
    assert not finals_only.series and finals_only and curves_line(finals_only) == "reward 0.61"


def test_garbage_gives_no_curves() -> None:
    for text in (None, "", "not json", "[1, 2]", '"x"', "{}", '{"reward": [null, "x", true]}', "1" * (5 << 20)):
        assert not parse_output_metrics(text), text
    curves = parse_output_metrics('{"reward": [NaN, Infinity, 0.5], "\\u001b]52;c;x\\u0007": [1]}')
    assert curves.series[REWARD] == ((3, 0.5),)  # non-finite values dropped
    assert all(name.isascii() and "\x1b" not in name for name in curves.series)  # names from outside are cleaned
    many = parse_output_metrics(json.dumps({"reward": list(range(MAX_POINTS + 50))}))
    assert len(many.series[REWARD]) == MAX_POINTS
    assert curves_line(JobCurves()) == ""


def test_job_view_carries_the_curves() -> None:
    job = {
        "name": "accounts/a/reinforcementFineTuningJobs/j",
        "state": "JOB_STATE_RUNNING",
        "jobProgress": {"totalInputRequests": 4},
        "outputMetrics": '{"steps": [{"step": 1, "reward": 0.3}]}',
    }
    assert JobView.from_job(job, None).curves == job_curves(job)
    assert JobView.from_job(job, None).curves.series[REWARD] == ((1, 0.3),)
    assert not JobView.from_job({**job, "outputMetrics": None}, None).curves
