-- Returns the $k active facts of the tenant most cosine-similar to $q, computed in DuckDB (no
-- in-memory index): the baseline bench/perf/search.py compares the cached matrix against.
-- Params: $user_id, $q (float[]), $model, $dim, $k.
select
    f.id,
    list_cosine_similarity(f.embedding, $q::float[]) as similarity
from facts as f
where f.user_id = $user_id
    and f.status = 'active'
    and f.embedding_model = $model
    and f.embedding_dim = $dim
order by similarity desc
limit $k
