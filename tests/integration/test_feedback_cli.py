"""`agen feedback record|ls` against a real Hub over HTTP, shown in `agen runs` and `agen transcript`;
a reviewed deployment's rounds in the task outcome, the transcript and the trace."""

from __future__ import annotations

import json
from pathlib import Path

from agen.api import registry as r
from agen.wire.tokens import CreateTokenRequest
from tests.integration.test_observe_cli import agen
from tests.observe_helpers import embedded_hub, http_hub

REVIEWED = [
    {"text": "draft: red"},
    {"text": '{"satisfied": false, "grade": 0.3, "feedback": "name three colours"}'},
    {"text": "red, green, blue"},
    {"text": '{"satisfied": true, "grade": 0.9, "feedback": "good"}'},
]
CONFIG = {
    "kind": "pool",
    "scale": {"min": 1, "max": 1},
    "review": {"rubric": "three colours", "maxIterations": 2},
}


async def test_feedback_recorded_from_the_cli_shows_in_runs_transcript_and_ls_json(
    tmp_path: Path,
) -> None:
    async with embedded_hub(tmp_path) as e, http_hub(e) as (url, token):
        await e.deploy("painter", script=REVIEWED, config=CONFIG)
        task = await e.run("painter", "name three colours")
        assert task.state == "succeeded" and task.outcome is not None
        assert task.outcome["review"]["rounds"] == 2 and task.outcome["review"]["grade"] == 0.9

        code, out, err = await agen(
            url,
            token,
            "feedback",
            "record",
            task.id,
            "--score",
            "0.8",
            "--note",
            "nice palette",
            "--label",
            "by=qa",
        )
        assert code == 0, err
        assert "+0.80" in out
        code, _, err = await agen(url, token, "feedback", "record", task.id, "--score", "-0.5")
        assert code == 0, err

        code, out, _ = await agen(url, token, "runs", "painter")
        # the reviewer's two grades (0.3, then 0.9) are feedback too, by "reviewer"
        assert code == 0 and "FEEDBACK" in out and "-0.50 (4)" in out
        code, out, _ = await agen(url, token, "runs", "--json")
        [run] = json.loads(out)["runs"]
        assert run["feedback"] == {"count": 4, "last_score": -0.5, "mean_score": 0.375}

        code, out, _ = await agen(url, token, "query", task.id)
        assert code == 0 and "feedback" in out and "+0.30 by reviewer" in out
        assert "+0.80 by " in out and "nice palette" in out and "-0.50 by " in out
        code, out, _ = await agen(url, token, "query", task.id, "--json")
        assert [f["score"] for f in json.loads(out)["feedback"]] == [0.3, 0.9, 0.8, -0.5]
        code, out, _ = await agen(url, token, "transcript", task.id)
        assert code == 0 and "feedback +0.80 by " in out and "[by=qa]: nice palette" in out
        assert "── reviewer · turn 2" in out and "name three colours" in out
        code, out, _ = await agen(url, token, "trace", task.id)
        assert code == 0 and "(reviewer)" in out and "review 1: needs_revision (grade 0.3)" in out
        assert "review 2: satisfied (grade 0.9)" in out

        code, out, _ = await agen(
            url, token, "feedback", "ls", "--json", "--label", "by=qa", "--since", "1h"
        )
        [f] = json.loads(out)["feedback"]
        assert f["run_id"] == run["id"] and f["task_id"] == task.id and f["deployment"] == "painter"
        assert f["score"] == 0.8 and f["note"] == "nice palette" and f["labels"] == {"by": "qa"}
        assert f["digest"] and f["digest"].startswith("sha256:")
        code, out, _ = await agen(url, token, "feedback", "ls", "painter")
        assert code == 0 and "nice palette" in out and "-0.50" in out
        code, out, _ = await agen(url, token, "feedback", "ls", "painter", "--json")
        graded = [
            (f["score"], f["note"], f["labels"])
            for f in json.loads(out)["feedback"]
            if f["by"] == "reviewer"
        ]
        assert graded == [
            (0.9, "good", {"round": "2", "result": "satisfied"}),
            (0.3, "name three colours", {"round": "1", "result": "needs_revision"}),
        ]
        code, out, _ = await agen(url, token, "feedback", "ls", "painter")
        assert "reviewer" in out and "name three colours" in out
        code, out, err = await agen(url, token, "feedback", "ls", "other")
        assert code == 0 and "no feedback matches" in err

        code, _, err = await agen(url, token, "feedback", "record", task.id, "--score", "1.5")
        assert code == 2 and "--score" in err
        code, _, err = await agen(url, token, "feedback", "record", "01NOPE", "--score", "1")
        assert code == 4 and "agen runs" in err
        viewer = (await e.client.call(r.CreateToken, CreateTokenRequest(scopes=["viewer"]))).token
        code, _, err = await agen(url, viewer, "feedback", "record", task.id, "--score", "1")
        assert code != 0 and "operator" in err
        code, out, _ = await agen(url, viewer, "feedback", "ls", "--json")
        assert code == 0 and len(json.loads(out)["feedback"]) == 4
