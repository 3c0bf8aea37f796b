-- A fact's valence code (engram.consolidate.pair_rules.valence_code): what the contradiction rules need of
-- its text before they can name a reason (negation count, a word of an antonym pair, a number, a name, a
-- marker that something ended), kept with its other keys (keys_version 2 on), so a night screens its
-- pairs by two integers and reads and parses the texts of the few that may conflict.
alter table facts add column if not exists valence_code integer;
