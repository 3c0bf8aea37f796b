-- When a row of facts or episodes was last changed by an update, in wall-clock UTC (null: never updated
-- since it was stored). Business times such as last_updated follow a run's as-of clock; this one follows
-- the machine's, so an on-disk search index can ask which rows changed after it was written
-- (engram.query.persisted). Every update of these tables sets it.
alter table facts add column if not exists changed_at timestamp;
alter table episodes add column if not exists changed_at timestamp;
