-- infera--0.1.sql: the SQL side of the Infera extension (docs/sql.md).
-- Functions live in the schema "infera" (created by CREATE EXTENSION).
\echo Use "CREATE EXTENSION infera" to load this file. \quit

-- The primary prediction of one record (the spec's first output; without a
-- spec, the model's first output column).  PARALLEL SAFE: parallel workers
-- (and Citus workers, next to the shards) each keep their own model cache.
CREATE FUNCTION predict(model_ref text, record jsonb) RETURNS double precision
    AS 'MODULE_PATHNAME', 'infera_pg_predict'
    LANGUAGE C STRICT STABLE PARALLEL SAFE COST 1000;

-- Every prediction field, with model_name, model_version and pipeline_hash.
CREATE FUNCTION predict_json(model_ref text, record jsonb) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'infera_pg_predict_json'
    LANGUAGE C STRICT STABLE PARALLEL SAFE COST 1000;

-- Scores the rows of a query batch_size at a time (one row out per row in;
-- a rejected row has error set and prediction NULL).
CREATE FUNCTION predict_query(model_ref text, query text, id_column text DEFAULT NULL,
                              batch_size integer DEFAULT 1024)
    RETURNS TABLE (id text, prediction jsonb, error text)
    AS 'MODULE_PATHNAME', 'infera_pg_predict_query'
    LANGUAGE C CALLED ON NULL INPUT VOLATILE PARALLEL UNSAFE;

-- json overloads: json keeps the order of keys, which a model without a
-- pipeline spec needs (its inputs are the record's numeric fields in order);
-- the jsonb forms refuse such models rather than guess.
CREATE FUNCTION predict(model_ref text, record json) RETURNS double precision
    AS 'MODULE_PATHNAME', 'infera_pg_predict'
    LANGUAGE C STRICT STABLE PARALLEL SAFE COST 1000;

CREATE FUNCTION predict_json(model_ref text, record json) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'infera_pg_predict_json'
    LANGUAGE C STRICT STABLE PARALLEL SAFE COST 1000;

-- A GGUF language model's greedy completion of prompt (deterministic), and
-- the mean-pooled, L2-normalised final hidden state of a text (docs/llm.md).
CREATE FUNCTION generate(model_ref text, prompt text, max_tokens integer DEFAULT 128) RETURNS text
    AS 'MODULE_PATHNAME', 'infera_pg_generate'
    LANGUAGE C STRICT STABLE PARALLEL SAFE COST 100000;

CREATE FUNCTION embed(model_ref text, input text) RETURNS jsonb
    AS 'MODULE_PATHNAME', 'infera_pg_embed'
    LANGUAGE C STRICT STABLE PARALLEL SAFE COST 10000;
