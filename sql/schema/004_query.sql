-- Query module tables: grounded-answer sessions and their exchanges. Idempotent.
-- Exchanges keep the query, answer, cited source ids, scores and costs, and the prompt's hash,
-- never the prompt itself.

create table if not exists ask_sessions (
    id              varchar not null,
    user_id         varchar not null,
    created_at      timestamp not null,
    updated_at      timestamp not null,
    n_exchanges     integer not null default 0,
    summary         varchar,                        -- rolling summary, refreshed every 10 exchanges
    summary_through integer not null default 0,     -- last exchange seq folded into the summary
    primary key (user_id, id)
);

create table if not exists ask_exchanges (
    id            varchar not null,
    user_id       varchar not null,
    session_id    varchar not null,
    seq           integer not null,
    query         varchar not null,
    answer        varchar,
    refused       boolean not null,
    reason        varchar,
    sources       varchar[] not null default [],
    confidence    double,
    coverage      double,
    input_tokens  integer not null default 0,
    output_tokens integer not null default 0,
    latency_ms    double,
    cost_usd      double not null default 0,
    prompt_hash   varchar,
    model         varchar,
    created_at    timestamp not null,
    primary key (user_id, id)
);
