"""A real tokenizer count for context budgets: the MiniLM WordPiece vocabulary shipped with engram."""

from __future__ import annotations

from functools import cache

from engram.embed.models import VOCAB_PATH


@cache
def _tokenizer():  # loaded once per process; no I/O at import
    from tokenizers import BertWordPieceTokenizer

    tok = BertWordPieceTokenizer(str(VOCAB_PATH), lowercase=True)
    tok.no_truncation()
    tok.no_padding()
    return tok


def count_tokens(text: str) -> int:
    """WordPiece tokens of the text (no special tokens)."""
    if not text:
        return 0
    return len(_tokenizer().encode(text, add_special_tokens=False).ids)


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of text with at most max_tokens tokens (cut at a token boundary)."""
    if max_tokens <= 0 or not text:
        return ""
    enc = _tokenizer().encode(text, add_special_tokens=False)
    if len(enc.ids) <= max_tokens:
        return text
    end = enc.offsets[max_tokens - 1][1]
    # a word split into several pieces would leave a fragment: cut back to the word start
    cut = text[:end]
    if end < len(text) and not text[end].isspace() and " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip()
