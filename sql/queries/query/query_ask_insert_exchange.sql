-- Appends one exchange of an ask session. Params: $id, $user_id, $session_id, $seq, $query, $answer,
-- $refused, $reason, $sources, $confidence, $coverage, $input_tokens, $output_tokens, $latency_ms,
-- $cost_usd, $prompt_hash, $model, $now.
insert into ask_exchanges (
    id, user_id, session_id, seq, query, answer, refused, reason, sources, confidence, coverage,
    input_tokens, output_tokens, latency_ms, cost_usd, prompt_hash, model, created_at
)
values (
    $id, $user_id, $session_id, $seq, $query, $answer, $refused, $reason, $sources::varchar[], $confidence,
    $coverage, $input_tokens, $output_tokens, $latency_ms, $cost_usd, $prompt_hash, $model, $now
)
