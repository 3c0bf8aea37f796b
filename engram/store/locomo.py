"""Importer for LoCoMo-format conversations: each turn becomes an episode."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from engram.errors import InvalidInput

_SESSION_KEY = re.compile(r"^session_(\d+)$")


def parse_session_time(text: str) -> datetime:
    """Parse LoCoMo session times such as '1:56 pm on 8 May, 2023'."""
    cleaned = re.sub(r"\s+", " ", text.strip())
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y", "%I:%M %p on %B %d, %Y"):
        try:
            return datetime.strptime(cleaned, fmt)
        except ValueError:
            continue
    raise InvalidInput(f"session_date_time: cannot parse {text!r}")


def turn_text(turn: dict[str, Any]) -> str:
    """The turn's text, with the caption of a shared image appended (it carries facts too)."""
    text = str(turn.get("text", "")).strip()
    caption = turn.get("blip_caption")
    if caption:
        text = f"{text} [shares an image: {caption}]".strip()
    return text


def locomo_records(path: Path, user_prefix: str = "") -> list[dict[str, Any]]:
    """Episode records for every turn of every conversation in a LoCoMo JSON file.

    The tenant is the conversation's sample_id; the episode id is '<sample_id>:<dia_id>';
    turns within a session are spaced one second apart so their order survives.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InvalidInput(f"file: not a readable LoCoMo JSON file: {exc}") from exc
    if isinstance(data, dict):
        data = [data]
    records: list[dict[str, Any]] = []
    for sample in data:
        if not isinstance(sample, dict) or not isinstance(sample.get("conversation"), dict):
            raise InvalidInput("file: each LoCoMo sample needs a 'conversation' object")
        sample_id = str(sample.get("sample_id", "conv"))
        conv = sample["conversation"]
        for key, turns in conv.items():
            match = _SESSION_KEY.match(key)
            if not match or not isinstance(turns, list):
                continue
            session = int(match.group(1))
            when = conv.get(f"{key}_date_time")
            if not isinstance(when, str):
                raise InvalidInput(f"{sample_id}.{key}_date_time: required session date")
            start = parse_session_time(when)
            for offset, turn in enumerate(turns):
                if not isinstance(turn, dict) or not turn.get("dia_id"):
                    raise InvalidInput(f"{sample_id}.{key}[{offset}].dia_id: required")
                text = turn_text(turn)
                if not text:
                    continue
                records.append(
                    {
                        "id": f"{sample_id}:{turn['dia_id']}",
                        "user_id": f"{user_prefix}{sample_id}",
                        "session_id": f"{sample_id}:session_{session}",
                        "role": turn.get("speaker"),
                        "kind": "turn",
                        "origin": "human",
                        "content": text,
                        "created_at": start + timedelta(seconds=offset),
                        "metadata": {
                            "dia_id": turn["dia_id"], "session": session, "session_date_time": when,
                        },
                    }
                )
    return records
