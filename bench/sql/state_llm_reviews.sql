-- Returns every LLM review, for comparing two stores' state (bench/store_state.py). No params.
select *
from llm_reviews
order by all
