"""A local HTTP server speaking the Gemini Batch API's REST shape (Developer API, inline requests).

POST /{version}/models/{model}:batchGenerateContent creates a job; GET /{version}/batches/{id} returns it.
Each job walks through a scripted list of states (the last one repeats); once SUCCEEDED, the job
carries one inlined response per request, in order, with the request's metadata. `answer(prompt,
schema_name)` returns the reply text for an item, or a dict (an item error); `lose` forgets jobs
(HTTP 404). Every request is recorded.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from engram.consolidate.batch import SCHEMAS
from engram.llm.fake_rules import rule_based_responder

STATE_NAMES = {"PENDING": "BATCH_STATE_PENDING", "RUNNING": "BATCH_STATE_RUNNING",
               "SUCCEEDED": "BATCH_STATE_SUCCEEDED", "FAILED": "BATCH_STATE_FAILED",
               "CANCELLED": "BATCH_STATE_CANCELLED", "EXPIRED": "BATCH_STATE_EXPIRED"}


def schema_name(generation_config: dict[str, Any]) -> str:
    """Which reply schema an inline request asked for (by the fields of its response schema)."""
    text = json.dumps(generation_config.get("responseSchema") or generation_config.get("responseJsonSchema"))
    if "clusters" in text:
        return "ExtractionReply"
    return "MergeReply" if "winner" in text else "ContradictionReply"


def rules(prompt: str, name: str) -> str | dict[str, Any]:
    """The offline rule-based answer (the same the fake LLM gives)."""
    schema = next(s for s in SCHEMAS.values() if s.__name__ == name)
    return rule_based_responder(prompt, schema)


def usage(prompt: str, text: str) -> dict[str, int]:
    inp, out = max(len(prompt) // 4, 1), max(len(text) // 4, 1)
    return {"promptTokenCount": inp, "candidatesTokenCount": out, "totalTokenCount": inp + out}


class MockBatchServer:
    """Scripted Gemini batch jobs; `states` is the walk every new job takes (override per test)."""

    def __init__(self) -> None:
        self.states: list[str] = ["PENDING", "RUNNING", "SUCCEEDED"]
        self.answer: Callable[[str, str], str | dict[str, Any]] = rules
        self.jobs: dict[str, dict[str, Any]] = {}
        self.created = 0
        self.requests: list[dict[str, Any]] = []
        mock = self

        class Handler(BaseHTTPRequestHandler):
            def _send(self, status: int, payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_POST(self) -> None:  # noqa: N802 - http.server API
                body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
                mock.requests.append({"method": "POST", "path": self.path, "body": body})
                if not self.path.split("?")[0].endswith(":batchGenerateContent"):
                    self._send(404, {"error": {"code": 404, "message": "no such method", "status": "NOT_FOUND"}})
                    return
                mock.created += 1
                name = f"batches/job{mock.created}"
                mock.jobs[name] = {"requests": body["batch"]["inputConfig"]["requests"]["requests"],
                                   "states": list(mock.states), "display": body["batch"].get("displayName")}
                self._send(200, mock.job_json(name, advance=False))

            def do_GET(self) -> None:  # noqa: N802 - http.server API
                mock.requests.append({"method": "GET", "path": self.path, "body": None})
                name = "batches/" + self.path.split("?")[0].rsplit("/", 1)[-1]
                if name not in mock.jobs:
                    self._send(404, {"error": {"code": 404, "message": "job not found", "status": "NOT_FOUND"}})
                    return
                self._send(200, mock.job_json(name, advance=True))

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def job_json(self, name: str, advance: bool) -> dict[str, Any]:
        """The job as the REST API returns it; a GET moves it one state along its script."""
        job = self.jobs[name]
        if advance and len(job["states"]) > 1:
            job["states"].pop(0)
        state = job["states"][0]
        meta: dict[str, Any] = {"@type": "type.googleapis.com/google.ai.generativelanguage.v1main.GenerateContentBatch",
                                "name": name, "displayName": job["display"], "state": STATE_NAMES[state],
                                "model": "models/gemini-2.5-flash", "createTime": "2026-11-24T03:00:00Z"}
        if state == "SUCCEEDED":
            responses = []
            for req in job["requests"]:
                prompt = req["request"]["contents"][0]["parts"][0]["text"]
                answer = self.answer(prompt, schema_name(req["request"].get("generationConfig", {})))
                item: dict[str, Any] = {"metadata": req.get("metadata", {})}
                if isinstance(answer, dict):
                    item["error"] = answer
                else:
                    item["response"] = {
                        "candidates": [{"content": {"role": "model", "parts": [{"text": answer}]},
                                        "finishReason": "STOP", "index": 0}],
                        "usageMetadata": usage(prompt, answer), "modelVersion": "gemini-2.5-flash"}
                responses.append(item)
            meta["output"] = {"inlinedResponses": {"inlinedResponses": responses}}
        return {"name": name, "metadata": meta}

    def prompts(self) -> list[tuple[str, str]]:
        """(metadata key, prompt) of every request of every job, in order."""
        return [(r.get("metadata", {}).get("key", ""), r["request"]["contents"][0]["parts"][0]["text"])
                for job in self.jobs.values() for r in job["requests"]]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
