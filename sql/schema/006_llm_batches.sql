-- Gemini Batch API bookkeeping (ENGRAM_LLM_MODE=batch): one job per run holds every tenant's
-- requests as separate items. A job has one row per tenant it holds (so user_id is on every row);
-- an item is one request: the review cases it carries and the alias maps to read its reply
-- (ids only: neither prompts nor memory text are stored).

create table if not exists llm_batch_jobs (
    job_name      varchar not null,     -- the provider's name, e.g. batches/abc123
    user_id       varchar not null,
    run_id        varchar not null,     -- the run that submitted it
    model         varchar not null,
    state         varchar not null,     -- submitted | collected | lost (failed, cancelled, expired, gone)
    provider_state varchar,             -- the last JOB_STATE_* seen
    items         integer not null,
    submitted_at  timestamp not null,
    checked_at    timestamp,
    collected_at  timestamp,
    collected_run_id varchar,
    error         varchar,
    primary key (user_id, job_name)
);

create table if not exists llm_batch_items (
    job_name      varchar not null,
    item_key      varchar not null,     -- the item's metadata key in the job
    user_id       varchar not null,
    run_id        varchar not null,
    kind          varchar not null,     -- contradiction | merge | extraction
    review_ids    varchar[] not null,   -- the llm_reviews cases this request carries
    aliases       json not null,        -- alias maps of the request (short ids -> store ids)
    prompt_hash   varchar not null,
    estimated_tokens integer not null,
    status        varchar not null,     -- submitted | applied | rejected | requeued
    input_tokens  integer,
    output_tokens integer,
    cost_usd      double,
    error         varchar,
    submitted_at  timestamp not null,
    collected_at  timestamp,
    primary key (user_id, job_name, item_key)
);

-- how often a case was sent in a batch job that came back lost, cancelled, expired or failed
alter table llm_reviews add column if not exists resubmits integer default 0;
