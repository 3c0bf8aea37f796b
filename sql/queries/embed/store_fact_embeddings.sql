-- Stores embeddings from the registered table `incoming_embeddings` on facts that have none.
-- No params.
update facts as f
set
    embedding = i.embedding,
    embedding_model = i.embedding_model,
    embedding_dim = i.embedding_dim,
    changed_at = now() at time zone 'UTC'
from incoming_embeddings as i
where f.user_id = i.user_id
    and f.id = i.id
    and f.embedding is null
