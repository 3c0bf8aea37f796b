-- The merge rule's verdict on a run's similar pair (engram.consolidate.merge_screen), judged by the
-- confidence stage while it writes, so the merge stage does not read every pair's texts again. Null: not
-- judged (the pair is below the merge threshold of the run that found it, or was stored before this
-- migration, or by a merge stage run without the confidence stage); the merge stage judges such a pair
-- itself when it is a candidate.
alter table run_fact_pairs add column if not exists same_statement boolean;
