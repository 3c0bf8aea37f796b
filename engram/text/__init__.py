"""Text heuristics: normalising and hashing, sentences, claims and their valence."""
