# ruff: noqa
"""Names vulture (`make lint`, `make test`) would call unused but that are used from outside
the Python call graph: entry points of Dagster, FastAPI, MCP and pydantic, operators and
parsers found by name, attributes set on third-party objects. Dead code does not belong
here: remove it. Each line is a name or ``_.attribute``, as ``vulture --make-whitelist``
writes them; keep them grouped by why they are used."""

# pydantic: model configuration, validators and hooks, fields read by name (records,
# settings, report models serialised to JSON)
model_config
_._utc_times
_.model_post_init
source_ref
write_order
first_seen
created_at
records_relinked
context_tokens
server_ms
wait_ms
onnx_tokens
lock_wait
index_keep_writer
ann_threshold
bounded_recall_above
embedder_precision
embed_threads
model_cache
ingest_embedder
writer_backend
openai_api_key
openai_base_url
openai_model
shared_data
celery_broker
celery_backend
backfill_partitions_per_run
failpoint_action
failpoint_log

# Dagster: assets, jobs and the IO manager's hooks (loaded by the code location)
ingest_job_celery_def
locomo_eval_report
group_catalog
_.handle_output
_.load_input

# FastAPI routes and handlers, MCP tools (registered by decorator)
_http
_invalid
healthz
add_messages
remember
memory_records

# found by name: chat backends (ops/backends/factory), loaders (@loader), the temporal rules
# (dispatched by the name of the pattern that matched), module-level __getattr__
OnnxChat
OpenAIChat
TransformersChat
load_events
load_jsonl
load_locomo
__getattr__
_._day_before_yesterday
_._day_after_tomorrow
_._anchored_day
_._today
_._yesterday
_._tomorrow
_._ago
_._vague_ago
_._in_n
_._unit
_._week_of_month
_._weekend
_._which_weekday
_._that_unit
_._weekday_dm
_._weekday_md
_._weekday_nth
_._bare_weekday
_._dmy
_._mdy
_._iso
_._dm
_._md
_._part_month
_._which_month
_._in_month
_._month_year
_._year

# run by name in a child process (benchmarks/faults.py: python -c '... import worker')
worker

# set on third-party objects (faiss, onnxruntime session options, tokenizers, the OpenAI
# SDK's retry hook) or read through getattr (the embedder's query memo)
_.efConstruction
_.efSearch
_.intra_op_num_threads
_.inter_op_num_threads
_.log_severity_level
_.padding_side
_.pad_token
_.pre_tokenizer
_.decoder
_._calculate_retry_timeout
_._query_memo
