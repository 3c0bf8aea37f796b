-- When a row of facts or episodes was last stored or changed, in wall-clock UTC (null: stored before this
-- migration and never updated since). Business times such as last_updated follow a run's as-of clock; this
-- one follows the machine's, so an on-disk search index can ask which rows changed after it was written
-- (engram.query.persisted). Every update of these tables sets it, and a stored row gets it by default.
alter table facts add column if not exists changed_at timestamp;
alter table episodes add column if not exists changed_at timestamp;
-- a stored row is marked too: a reader finds rows stored after its index by time as well as by rowid
-- (a checkpoint that compacts deleted rows renumbers the rows after them)
alter table facts alter column changed_at set default (now() at time zone 'UTC');
alter table episodes alter column changed_at set default (now() at time zone 'UTC');
