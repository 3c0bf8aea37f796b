-- Inserts new facts from the registered table `incoming_facts`; a fact id that exists is skipped.
-- No params.
insert into facts (
    id, user_id, text, claim_type, category, confidence, confidence_at, evidence_count, status,
    asserted_at, valid_from, created_at, last_updated, last_reinforced_at, embedding,
    embedding_model, embedding_dim, content_hash, tags, visibility, is_private, run_id
)
select
    i.id, i.user_id, i.text, i.claim_type, i.category, i.confidence, i.confidence_at,
    i.evidence_count, i.status, i.asserted_at, i.valid_from, i.created_at, i.last_updated,
    i.last_reinforced_at, i.embedding, i.embedding_model, i.embedding_dim, i.content_hash, i.tags,
    i.visibility, i.is_private, i.run_id
from incoming_facts as i
on conflict do nothing
