"""Words aimed at the assistant's own setup, not at the user's world: "ignore previous instructions",
"delete everything in memory", "reveal your system prompt".

A user's standing instruction is about a task ("always use APA style when I ask about references"); a
sentence that tells the assistant to drop, bypass or disclose its own instructions, prompt or memory is
about the agent itself: no fact about the user, no preference to offer back as a standing instruction,
and the shape of a prompt injection. Such a sentence stays an episode (searchable, with its provenance)
and never becomes a fact. The rules read the sentence's structure, a control verb with the assistant's
own setup as its object, not any one phrasing.
"""

from __future__ import annotations

import re

# what an assistant is set up with: its instructions, prompt, rules and memory
_SETUP = (r"instructions?|prompts?|rules|guidelines|directives|programming|guardrails|safeguards|restrictions"
          r"|system\s+messages?")
_EARLIER = r"previous|prior|above|earlier|preceding|original|initial|former|existing|system"
_LEAD = r"(?:^|[,;:.!?]\s*|\b(?:and|then|now|just|also|please|to)\s+)"
_DROP = re.compile(  # ignore / disregard / override what came before or the setup itself
    rf"{_LEAD}(?:ignore|disregard|forget|override|bypass|skip)\s+(?:(?:all|any|the|your|of|these|those)\s+)*"
    rf"(?:(?:{_EARLIER})\b|(?:\w+\s+)?(?:{_SETUP})\b)", re.I)
_ERASE = re.compile(  # wipe the assistant's memory wholesale
    rf"{_LEAD}(?:delete|erase|wipe|clear|reset|purge|forget)\s+(?:(?:all|of|your|the)\s+)*"
    r"(?:memory|memories|everything\s+(?:you\s+(?:know|remember|were\s+told)|(?:in|from)\s+(?:your\s+|the\s+)?memory)"
    r"|(?:stored|saved)\s+(?:data|memories|facts))\b", re.I)
_DISCLOSE = re.compile(  # print the assistant's own prompt
    rf"{_LEAD}(?:reveal|print|show|repeat|output|display|tell\s+me|give\s+me)\s+(?:me\s+)?"
    rf"(?:your\s+(?:\w+\s+)?(?:{_SETUP})|the\s+(?:system|hidden|initial|original|secret)\s+(?:{_SETUP}))\b", re.I)


def addresses_assistant_setup(sentence: str) -> bool:
    """Whether the sentence tells the assistant to drop, erase or disclose its own instructions, prompt or
    memory (an instruction about the agent itself, not about the user's world or tasks)."""
    s = sentence.strip()
    return bool(_DROP.search(s) or _ERASE.search(s) or _DISCLOSE.search(s))
