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


# WordPiece reads a "word" longer than 100 characters (a base64 blob, a minified file) as one [UNK]: an
# LLM's tokenizer reads it as hundreds of tokens. Such a run is counted at one token per
# BLOB_CHARS_PER_TOKEN characters (about what BPE tokenizers give random alphanumerics), so a budget
# holds against what the reader is charged.
LONG_WORD_CHARS = 100
BLOB_CHARS_PER_TOKEN = 3


def _costs(text: str) -> tuple[list[int], list[tuple[int, int]]]:
    """Each token's count toward a budget and its character span."""
    enc = _tokenizer().encode(text, add_special_tokens=False)
    costs = [1 if hi - lo < LONG_WORD_CHARS else -(-(hi - lo) // BLOB_CHARS_PER_TOKEN) for lo, hi in enc.offsets]
    return costs, enc.offsets


def count_tokens(text: str) -> int:
    """WordPiece tokens of the text (no special tokens); an overlong word counts as its length / 3."""
    if not text:
        return 0
    return sum(_costs(text)[0])


def truncate_to_tokens(text: str, max_tokens: int) -> str:
    """The longest prefix of text with at most max_tokens tokens (cut at a token boundary; an overlong
    word is cut inside, at its share of the budget)."""
    if max_tokens <= 0 or not text:
        return ""
    costs, offsets = _costs(text)
    if sum(costs) <= max_tokens:
        return text
    used = 0
    end = 0
    for cost, (lo, hi) in zip(costs, offsets):
        if used + cost > max_tokens:
            if cost > 1:  # an overlong word: keep as much of it as the rest of the budget pays for
                end = lo + (max_tokens - used) * BLOB_CHARS_PER_TOKEN
                return text[:end].rstrip() if end > lo else text[:lo].rstrip()
            break
        used += cost
        end = hi
    # a word split into several pieces would leave a fragment: cut back to the word start
    cut = text[:end]
    if end < len(text) and not text[end].isspace() and " " in cut:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip()
