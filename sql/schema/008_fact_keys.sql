-- Keys derived from a fact's text (engram.consolidate.fact_keys), so a night looks up the few facts that
-- state what its new facts state, or another value of the same attribute, instead of reading every text.
-- The text of a fact never changes; keys_version is the rule that computed the keys (null: not yet
-- keyed), and a night keys the active facts whose version is not the current one.
alter table facts add column if not exists statement_key varchar;
alter table facts add column if not exists frame_key varchar;
alter table facts add column if not exists keys_version integer;
