/*
 * main.c -- the `infera` command: a table of sub-commands (shared/DESIGN.md §4).
 *
 * `infera <command> [options]`; `infera help [command]`.  Exit status 0 on
 * success, non-zero with a one-line error on stderr naming what failed.
 */
#include <stdarg.h>
#include <string.h>

#include "cli/cli.h"

const cli_command cli_commands[] = {
    {"run", cmd_run, "run a model on input files",
     "usage: infera run REF [--input NAME=FILE]... [--output-dir DIR] [--output-format npy|pb] [--threads N]\n"
     "                  [--max-run-ms N] [--precision fp32|bf16]\n"
     "\n"
     "Runs the model REF (an .onnx file) once.  Each --input binds a .npy or ONNX\n"
     "TensorProto .pb file to the graph input NAME (NAME= may be left out when the\n"
     "model has one input).  Sequence and optional inputs are read as ONNX\n"
     "SequenceProto / OptionalProto .pb files.  With --output-dir, each output is\n"
     "written to DIR/<output name>.npy (or .pb); values .npy cannot hold (sequences,\n"
     "optionals, bfloat16) are written as .pb.  Without it, each output's name,\n"
     "dtype, shape and leading values are printed.\n"
     "\n"
     "--max-run-ms N bounds the run's time (default 60000, 0 = no limit): a Loop of\n"
     "2^62 iterations fails with an error naming the node instead of running on.\n"
     "\n" CLI_PRECISION_HELP},
    {"info", cmd_info, "describe a model: inputs, outputs, opsets, ops, parameters",
     "usage: infera info REF [--json]\n"
     "       infera info --cpu [--json]   (this machine: CPU, features, caches, kernel path)\n"
     "\n"
     "Prints the model's inputs and outputs with dtypes and shapes (symbolic\n"
     "dimensions by name), opset imports, op counts, parameter count and size.\n"},
    {"bench", cmd_bench, "measure load time, latency and throughput",
     "usage: infera bench REF [--input NAME=FILE]... [--threads N] [--iters N] [--warmup N] [--batch N] [--json]\n"
     "                    [--profile] [--max-run-ms N] [--precision fp32|bf16]\n"
     "\n"
     "Runs the model repeatedly on the given inputs, or on random inputs of the\n"
     "declared shapes (symbolic dimensions = --batch, default 1).  --json prints one\n"
     "object: {\"model\",\"threads\",\"batch\",\"iters\",\"load_ms\",\"first_run_ms\",\n"
     "\"latency_us\":{\"mean\",\"p50\",\"p90\",\"p99\"},\"throughput_rows_per_s\",\"peak_rss_mb\"}.\n"
     "\n"
     "--max-run-ms N bounds each run's time (default 60000, 0 = no limit).\n"
     "\n" CLI_PRECISION_HELP "The --json object then has \"precision\" too.\n"
     "\n"
     "--profile times every node of the optimised graph over the timed runs and\n"
     "prints them sorted by total time (node, op with its fused activation, output\n"
     "shape of the last run, calls, mean us per run, % of the run's wall time), then\n"
     "the same by op type; nodes of If/Loop/Scan bodies show as PARENT/BODY/NAME.\n"
     "With --json the object gains \"profile\":[{\"node\",\"op\",\"parent\",\"graph\",\"shape\",\n"
     "\"calls\",\"total_us\",\"us_per_run\",\"min_us\",\"max_us\",\"pct_of_run\"}] (largest first)\n"
     "and \"profile_run_us\" (mean run time while profiling).  Latencies then include\n"
     "the timer reads (about 80 ns a node).\n"},
    {"conformance", cmd_conformance, "run the ONNX backend test suites",
     "usage: infera conformance [--suite node|pytorch-converted|pytorch-operator|simple|opset18plus|all]\n"
     "                          [--filter REGEX] [--data-dir DIR] [--opset-dir DIR]\n"
     "                          [--expected-failures FILE] [--quiet]\n"
     "\n"
     "Runs the ONNX backend test data (Debian package libonnx-testdata, default\n"
     "DIR /usr/share/libonnx-testdata/data), or with --suite opset18plus Infera's\n"
     "suite for opsets 18-26 (models and ONNX Runtime's outputs, default DIR\n"
     "tests/conformance/data of the source tree), one process per test.  Prints one line per\n"
     "test (PASS, FAIL with the reason, XFAIL for a listed known failure, XPASS for a\n"
     "listed test that now passes) and closes with 'N passed, M failed'.  Exit status\n"
     "is non-zero when a test fails that is not listed in the expected-failures\n"
     "file, or a listed test passes.  The file (default: $INFERA_EXPECTED_FAILURES, else\n"
     "tests/conformance/expected_failures.txt of the source tree) has one\n"
     "'suite/test_name  reason' per line.  The source tree is the working directory\n"
     "when it has these files, else the tree this binary was built from.\n"},
    {"ops", cmd_ops, "list the operators this build implements",
     "usage: infera ops [--markdown]\n"
     "\n"
     "Lists every operator with its domain and the opset versions supported.\n"},
    {"registry", cmd_registry, "model registry: versions, aliases, access control, audit, lineage",
     "usage: infera registry <sub-command> [options]     (docs/registry.md)\n"
     "\n"
     "  register NAME MODEL [--pipeline SPEC] [--meta K=V]... [--metric K=NUMBER]...\n"
     "           [--description TEXT] [--training-data REF] [--approved-use TEXT]...\n"
     "           [--derived-from NAME@VERSION]   (a pruned/distilled/quantized model's source)\n"
     "           [--baseline SRC]   (the training data's drift baseline, stored with the version:\n"
     "                              docs/monitoring.md)\n"
     "                              validate MODEL, derive its signature, store version N+1\n"
     "  list | show REF | versions NAME | resolve REF     (--json for machines)\n"
     "  delete NAME@VERSION [--reason TEXT]      soft delete, audited\n"
     "  alias NAME@VERSION ALIAS [--protect|--unprotect]  |  unalias NAME ALIAS\n"
     "  grant|revoke PRINCIPAL ROLE [--model NAME]   roles: admin publisher approver predictor viewer\n"
     "  token create PRINCIPAL [--role ROLE [--model NAME]] | token list [PRINCIPAL] |\n"
     "  token revoke PRINCIPAL [--id TOKEN_ID]\n"
     "  auth enable|status\n"
     "  audit [--model NAME] [--since TIME|AGE] [--limit N] [--json]  |  audit verify\n"
     "  lineage REF [--json]  |  lineage --table DST\n"
     "  record-use REF --kind batch|stream|serve [--source S] [--destination D] [--job ID]\n"
     "  record-prediction REF --rows N [--mode M] [--source S] [--inputs FILE] [--job ID]\n"
     "  quota set PRINCIPAL [--rps N] [--rows-per-s N] [--burst-s S] | quota remove PRINCIPAL |\n"
     "  quota list [--json]        per-caller limits `infera serve` enforces (PRINCIPAL, 'anonymous', '*')\n"
     "\n"
     "REF is NAME (latest version), NAME@VERSION or NAME@ALIAS.  Global options (any\n"
     "command, before or after it): --home DIR (INFERA_HOME, default ./infera-data;\n"
     "SQLite registry DIR/registry.db, artifacts DIR/artifacts or INFERA_ARTIFACTS),\n"
     "--registry postgresql://... (INFERA_REGISTRY), --token TOKEN (INFERA_TOKEN).\n"
     "The first 'token create NAME --role admin' turns auth on.\n"},
    {"batch", cmd_batch, "score a file or table into another (CSV, JSON lines, SQLite, PostgreSQL)",
     "usage: infera batch --model REF --input SRC --output DST [--id-column COL] [--threads N] [--resume]\n"
     "                    [--mode append|replace|upsert] [--errors DST] [--max-error-rate R]\n"
     "                    [--progress bar|json|none] [--job-id ID] [--shard K/N] [--pipeline SPEC]\n"
     "                    [--chunk-rows N] [--checkpoint-ms N] [--no-score]      (docs/batch.md)\n"
     "                    [--precision fp32|bf16]   (session precision: docs/sessions.md)\n"
     "                    [--log-predictions DST [--log-sample F]]  (prediction log: docs/monitoring.md)\n"
     "\n"
     "SRC/DST: csv:PATH, jsonl:PATH (- = stdin/stdout), sqlite:PATH?table=T or\n"
     "sqlite:PATH?query=SQL (sources), postgresql://...?table=T (or &query=SQL).\n"
     "Output rows: the id column (row_number without one), the prediction fields,\n"
     "model_name, model_version, pipeline_hash, scored_at.  Tables are created with\n"
     "typed columns and keyed by the id column.  Modes: replace (files' default:\n"
     "start empty), upsert (tables' default: a row per id), append (keep what is there;\n"
     "an existing table of another shape gets the missing columns -- without append it\n"
     "is refused and left unchanged).  Ids are text: the source's exact characters.\n"
     "Chunks commit in source order and checkpoint into HOME/jobs/<job id>.json;\n"
     "--resume after a crash finishes the job with no row lost or written twice; it\n"
     "refuses another input/output/errors/shard/model/pipeline than the job's, never\n"
     "truncates a file the job did not write, and does nothing for a finished job.\n"
     "Bad rows go to --errors DST with their reason; --max-error-rate stops a job\n"
     "whose input is mostly bad.  --shard K/N scores the PostgreSQL rows with\n"
     "abs(hashtext(id::text)) % N = K.  The summary gives rows read/scored/written/\n"
     "rejected, wall and CPU time and CPU-seconds per million predictions.\n"},
    {"stream", cmd_stream, "score events from Redis Streams, MQTT or stdin into a stream, table or stdout",
     "usage: infera stream --model REF --input SRC --output DST [--errors DST] [--id-column COL]\n"
     "                     [--threads N] [--max-batch N] [--max-delay-ms N] [--max-events N]\n"
     "                     [--consumer NAME] [--pipeline SPEC] [--progress-ms N] [--no-score]   (docs/stream.md)\n"
     "                     [--precision fp32|bf16]   (session precision: docs/sessions.md)\n"
     "                     [--log-predictions DST [--log-sample F]]  (prediction log: docs/monitoring.md)\n"
     "                     [--baseline FILE] [--monitor-window S]  (drift windows: docs/monitoring.md)\n"
     "                     [--monitor RULES]  (alert rules on the windows: docs/monitoring.md)\n"
     "\n"
     "SRC: redis://H:P/STREAM?group=G[&consumer=C][&field=data][&start=0|$][&claim_idle_ms=N]\n"
     "(a consumer group, created with MKSTREAM; this consumer's pending entries first),\n"
     "mqtt://H:P/TOPIC[?client_id=ID][&qos=1] (persistent session), jsonl:- or jsonl:PATH.\n"
     "DST: redis://H:P/STREAM[?dedupe_ttl=S][&maxlen=N], sqlite:PATH?table=T,\n"
     "postgresql://...?table=T, mqtt://H:P/TOPIC, jsonl:- or jsonl:PATH.\n"
     "At-least-once: a micro-batch (<= --max-batch events, default 256, waiting at most\n"
     "--max-delay-ms, default 20, for more after the first) is scored, written and\n"
     "committed before its events are acknowledged.  Outputs are idempotent: tables\n"
     "upsert and Redis streams deduplicate by the id column (else the event id), so a\n"
     "redelivered event leaves one output.  Output: the key, event_id, the prediction\n"
     "fields, model_name, model_version, pipeline_hash, scored_at.  Malformed or\n"
     "rejected events go to --errors DST with their reason; the rest go on.\n"
     "SIGTERM/SIGINT finish the micro-batch in hand, then exit 0; so do the end of a\n"
     "jsonl input and --max-events N.  Progress and the summary are JSON lines on stderr\n"
     "(with the CPU seconds per million predictions).  --baseline FILE (or the baseline\n"
     "stored with a registry version) keeps drift windows of --monitor-window S seconds\n"
     "(default 60): each window is a {\"event\":\"drift\",...} line when it ends, and the\n"
     "window in progress when the stream stops.  --monitor RULES checks each reported\n"
     "window against the alert rules serve --monitor reads (a log line, webhook, alias\n"
     "rollback; an {\"event\":\"alert\",...} line), once per breach.  A \"labels\" section\n"
     "in RULES joins late labels with the --log-predictions log every 10 s and at the end\n"
     "(an {\"event\":\"quality\",...} line) and checks its quality rules.\n"},
    {"features", cmd_features, "compute training features from raw records with a pipeline spec",
     "usage: infera features --spec SPEC --input SRC --output DST [--as-of COLUMN --history sqlite:PATH?table=T]\n"
     "                       [--model REF] [--batch-size N]\n"
     "\n"
     "Runs the raw records of SRC through the pipeline spec (schema checks, lookups,\n"
     "transforms) with the same code as serving, and writes the id column, the\n"
     "passthrough fields and the feature columns to DST (csv:, jsonl:, sqlite:...?table=T,\n"
     "or npy:PATH for a float32 matrix `infera run` reads).  With --as-of COLUMN the\n"
     "lookups are point in time: each record sees the store values as of its own\n"
     "COLUMN timestamp, read from --history (a SQLite table with every version) or\n"
     "the lookup's own store, as one query per chunk.  Streams; rejected records are\n"
     "reported on stderr and left out.  --model checks the spec against a model.\n"},
    {"fit-spec", cmd_fit_spec, "learn a spec's transform parameters from training data",
     "usage: infera fit-spec --spec TEMPLATE --input SRC --output SPEC [--as-of COLUMN --history URI]\n"
     "\n"
     "Learns the parameters of transforms marked \"fit\": true (standardize mean/std,\n"
     "min_max min/max, impute mean, bucketize edges from quantiles, one_hot/ordinal\n"
     "categories) from the records of SRC and writes the completed spec.\n"},
    {"evaluate", cmd_evaluate, "measure a model's quality on labelled data and its cost, against a baseline",
     "usage: infera evaluate REF --data SRC --label COL [--spec FILE] [--baseline REF] [--json]\n"
     "                       [--max-drop METRIC=X]... [--register] [--task binary|multiclass|regression]\n"
     "                       [--id-column COL] [--threads N]                      (docs/compression.md)\n"
     "                       [--precision fp32|bf16] [--baseline-precision fp32|bf16]\n"
     "\n"
     "Runs REF over the labelled records of SRC (csv:, jsonl:, sqlite:, postgresql: as `infera batch`)\n"
     "through its pipeline spec (--spec, the registry's, <model>.pipeline.json, or the default\n"
     "mapping); the label column and the id column are not model inputs.  Quality:\n"
     "accuracy, precision, recall, f1, auc, logloss (classification; macro averages for\n"
     "multi-class; binary tasks score P(class 1)) or rmse, mae, r2 (regression), as\n"
     "scikit-learn computes them.  Cost: file size, parameters, batch-1 p50/p99 latency,\n"
     "batch-64 throughput, peak RSS.  --baseline REF evaluates it too (same data, same\n"
     "--spec) and shows deltas; --max-drop auc=0.005 exits 1 when a metric drops by more.\n"
     "--json prints {\"model\",\"rows\",\"task\",\"metrics\",\"cost\",\"baseline\",\"delta\"}.\n"
     "--register stores the metrics on the registry version REF names.\n"
     "--precision / --baseline-precision: the session precision of REF / of the baseline\n"
     "(default fp32; the JSON gains \"precision\").  `evaluate M --precision bf16 --baseline M`\n"
     "measures what bf16 changes in M's quality and cost.\n"},
    {"monitor", cmd_monitor, "prediction drift against a training baseline, quality from late labels",
     "usage: infera monitor baseline REF --data SRC [-o FILE]\n"
     "       infera monitor drift REF --log SRC (--baseline FILE | --data SRC) [--since T]\n"
     "                            [--window 1h] [--json]\n"
     "       infera monitor labels REF --log SRC --labels SRC --id-column C --label-column L\n"
     "                             [--prediction-column P] [--json]\n"
     "       infera monitor check REF --log SRC --rules FILE [--baseline FILE | --data SRC]\n"
     "                            [--labels SRC --id-column C --label-column L] [--dry-run] [--json]\n"
     "       infera monitor report REF --log SRC --html OUT [--baseline FILE | --data SRC]\n"
     "                             [--window 1h] [--labels SRC --id-column C --label-column L]\n"
     "       infera monitor baseline REF --data SRC --register   (stored with the registry version)\n"
     "       common: [--pipeline SPEC] [--home DIR] [--registry URL]      (docs/monitoring.md)\n"
     "\n"
     "Works on prediction logs (`infera batch ... --log-predictions DST [--log-sample F]`:\n"
     "record_id, logged_at, model_name, model_version, pipeline_hash, the model-input\n"
     "features and the outputs; sensitive fields never).  baseline: per-feature and\n"
     "per-output statistics of SRC scored through REF's spec (quantile bins and counts,\n"
     "frequencies, missing rates) as JSON.  drift: PSI, Jensen-Shannon distance and KS\n"
     "(numbers), PSI, JS and chi-square (categories) of the log's rows of REF's version\n"
     "against the baseline; --json prints {\"model\",\"version\",\"rows\",\"features\",\"outputs\"}; with\n"
     "--window (90s, 15m, 1h, 1d: by logged_at) {\"model\",\"version\",\"window_s\",\"windows\":[{..., "
     "\"start\",\"end\"}]}.\n"
     "labels: joins ground truth to logged predictions by id and prints evaluate's metrics\n"
     "({\"rows_joined\",\"metrics\",...}); late, missing and duplicate labels are counted.\n"
     "check: evaluates alert rules (drift or, with --labels, quality metric, feature,\n"
     "threshold, window, for, min_rows, action log|webhook|rollback) over the log once,\n"
     "for cron; runs the actions unless\n"
     "--dry-run; exit 3 when a rule fires ({\"firing\":[...]}), 0 when none does.\n"
     "report: one self-contained HTML file (inline SVG): drift per window, distributions\n"
     "against the baseline, quality per window.  Without --baseline/--data, a registry\n"
     "version's stored baseline is used.\n"},
    {"prune", cmd_prune, "remove the least important weights or neurons of a model",
     "usage: infera prune IN -o OUT --sparsity S [--structured] [--calibration SRC [--spec FILE]]\n"
     "                    [--calibration-rows N] [--threads N]                  (docs/compression.md)\n"
     "\n"
     "Magnitude pruning of Gemm/MatMul/Conv weights.  Without --structured, the fraction S\n"
     "of smallest weights of each layer becomes zero (same file size and speed on dense\n"
     "kernels).  With --structured, the fraction S of the hidden neurons between two\n"
     "dense layers (and of the channels between two Convs) is removed (the model becomes\n"
     "smaller and faster) and, with\n"
     "--calibration records (mapped by IN's pipeline or --spec), the next layer is refitted\n"
     "by least squares to recover quality.  OUT keeps IN's input and output names and shapes.\n"},
    {"distill", cmd_distill, "train a small MLP that imitates a model (knowledge distillation)",
     "usage: infera distill --teacher REF --data SRC --student mlp:H1,H2,... -o OUT [--spec FILE]\n"
     "                      [--epochs N] [--temperature T] [--holdout F] [--seed N] [--label COL]\n"
     "                      [--lr X] [--batch-size N] [--patience N] [--threads N] [--quiet]\n"
     "\n"
     "Scores the records of SRC with the teacher (through its pipeline) and trains a\n"
     "student MLP on its outputs: soft targets at temperature T (default 2), mini-batch\n"
     "Adam (default 64 rows, lr 1e-3), up to N epochs (default 100) with early stopping on\n"
     "a holdout fraction F (default 0.2, patience 8).  Inputs are standardised inside the\n"
     "ONNX graph.  OUT has the teacher's input and outputs (probabilities and label), so it\n"
     "drops in for it.  The same --seed gives the same file, byte for byte.  Prints fidelity\n"
     "to the teacher and, with --label COL, quality of both on the holdout.  --threads is for\n"
     "scoring with the teacher; training runs on one thread (reproducible).\n"},
    {"ui", cmd_ui, "the read-only web console of a registry, on its own (no models served)",
     "usage: infera ui (--home DIR | --registry URL) [--host H] [--port P] [--auth-metrics]\n"
     "\n"
     "Serves the console of `infera serve --ui` at http://H:P/ui (default 127.0.0.1:8000;\n"
     "--port 0 = any free port, printed) without serving a model: the registry's models,\n"
     "versions and aliases, each model's lineage graph (training data -> versions -> the\n"
     "jobs and servers that used them) and the audit log, read from the registry at\n"
     "--home DIR (its SQLite file) or --registry URL (PostgreSQL).  Read-only: only GET\n"
     "/ui, /ui/*, /metrics and /v2/health/live answer; every model and repository route is\n"
     "404.  --auth-metrics: the console's data needs a registry token (viewer role).\n"
     "The registry calls run as $INFERA_TOKEN's principal (the audit log needs approver\n"
     "or admin when the registry has tokens).  See docs/monitoring.md.\n"},
    {"serve", cmd_serve, "serve models over HTTP (KServe V2) with dynamic batching",
     "usage: infera serve [--host H] [--port P] [--model [NAME=]REF]... [--max-batch N] [--max-queue-delay-us N]\n"
     "                    [--threads N] [--config FILE] [options]\n"
     "\n"
     "Serves models over the KServe V2 / Open Inference Protocol REST API on H:P\n"
     "(default 127.0.0.1:8000): health, metadata, infer (JSON and binary tensors),\n"
     "the model repository API, POST /v2/models/NAME/records (raw records through\n"
     "the pipeline) and Prometheus metrics at /metrics.  REF is an .onnx file or a\n"
     "registry NAME, NAME@VERSION or NAME@ALIAS; a model is served under NAME, else\n"
     "its registry name, else its file name without extension.  --all-aliases serves\n"
     "every NAME@ALIAS of the registry under that name and follows alias moves\n"
     "(LISTEN/NOTIFY with a PostgreSQL registry, polling with SQLite).\n"
     "\n"
     "Other options (also INFERA_SERVE_<KEY> variables and 'key = value' lines in\n"
     "--config FILE): --preferred-batch 8,16  --max-queue N  --http-threads N\n"
     "--max-body-bytes N  --conn-memory-bytes N  --max-connections N  --timeout-s N\n"
     "--read-deadline-s N  --request-timeout-ms N  --drain-timeout-s N  --poll-secs N\n"
     "--auth-cache-secs N  --auth-metrics  --auth-health  --access-log FILE|-  --home DIR\n"
     "--registry URL  --model-root DIR  --allow-repository-paths  --max-models N\n"
     "--precision fp32|bf16 (every model's sessions; bf16 only on AVX512_BF16 CPUs, docs/sessions.md).\n"
     "\n"
     "--read-deadline-s N (default 30): a request's line, headers and body must arrive\n"
     "within N s of its first byte (--timeout-s is only an idle timer); near the\n"
     "connection limit the oldest connections still reading are cut to keep a tenth\n"
     "free for clients that finish their requests.\n"
     "Repository API (POST /v2/repository/models/NAME/load|unload): a load takes a\n"
     "registry reference, or reloads a configured name; a file path only with\n"
     "--allow-repository-paths, which needs --model-root DIR: the path's real path\n"
     "(symlinks resolved) must be a regular file under DIR, anything else is one\n"
     "generic 404.  --max-models N (default 16) caps the names the API adds.  With\n"
     "auth on, loads need publisher (a file path: admin); every load and unload is\n"
     "audited in the registry.\n"
     "\n"
     "Traffic: --route NAME=REF:W[,REF:W]... splits NAME's requests between versions by\n"
     "weight (--route-sticky principal|header:NAME keeps one caller on one target);\n"
     "--shadow NAME=REF:FRACTION copies that share of NAME's requests to REF after\n"
     "answering and compares the outputs (agreement, mean absolute difference on\n"
     "/metrics).  Weights change at run time: repository load with\n"
     "{\"parameters\": {\"route\": \"REF:W,...\"}}.\n"
     "\n"
     "Per-caller quotas: --quota PRINCIPAL=RPS[:ROWS_PER_S[:BURST_S]] (repeatable;\n"
     "'anonymous' = callers without a token, '*' = every principal without its own)\n"
     "and the registry's (`infera registry quota set`, re-read every poll period; they\n"
     "win).  A request over its caller's token buckets gets 429 with Retry-After\n"
     "before it reaches a batcher; /metrics counts allowed/limited per principal.\n"
     "--grpc-port P also serves the KServe V2 gRPC service inference.GRPCInferenceService\n"
     "on H:P (default off): health, metadata, ModelConfig, ModelInfer (typed or raw\n"
     "tensors), ModelStreamInfer, the repository methods (proto/kserve_v2.proto); the\n"
     "same models, auth (authorization: Bearer metadata), limits and metrics.\n"
     "--grpc-max-in-flight N (default 1024) bounds the gRPC calls served at once.\n"
     "\n"
     "Generative models: a GGUF file (or a registry version whose artifact is one) is\n"
     "served OpenAI-style: POST /v1/completions, /v1/chat/completions (chat template\n"
     "recognised from the file: ChatML, llama-3, llama-2; default ChatML),\n"
     "/v1/embeddings, GET /v1/models; \"stream\": true sends Server-Sent Events.\n"
     "--llm-slots N (default 4) sequences are decoded together (one KV cache each);\n"
     "--llm-ctx N (default 2048) positions per sequence; --llm-queue N (default 64)\n"
     "requests wait for a slot before 429.  Token metrics use vLLM's names (vllm:*).\n"
     "\n"
     "Monitoring (docs/monitoring.md): --log-predictions DST [--log-sample F] logs the\n"
     "records endpoint's scored records and /infer's tensor rows (HTTP and gRPC); --baseline [NAME=]FILE[,...] (or a "
     "baseline\n"
     "stored with the registry version) keeps drift windows (--monitor-window S, default\n"
     "60) exported as infera_feature_drift{model,version,feature,metric}; --monitor RULES\n"
     "evaluates alert rules every --monitor-interval S (webhook, alias rollback); a\n"
     "\"labels\" section in RULES joins late labels with the log at each check for its\n"
     "quality rules (infera_model_quality{model,version,metric}, history for the console);\n"
     "--ui serves a read-only console at /ui; --cpu-price-per-hour P adds the cost\n"
     "per million predictions to /metrics.\n"
     "See docs/serving.md and docs/llm.md.\n"},
    {"quantize", cmd_quantize, "write an INT8 (QDQ or QOperator) ONNX model from an FP32 one",
     "usage: infera quantize IN -o OUT [--mode dynamic|static] [--calibration SRC [--spec FILE]\n"
     "                       [--calibration-rows N]] [--method minmax|percentile|entropy] [--per-channel]\n"
     "                       [--format qdq|qoperator] [--exclude NODE]... [--reduce-range]\n"
     "                       [--quantize-attention] [--sensitivity] [--min-sqnr DB]\n"
     "                       [--sensitivity-json FILE]\n"
     "\n"
     "Quantizes the Gemm, MatMul and Conv nodes with constant weights of the ONNX\n"
     "model IN to 8 bits and writes a standard ONNX INT8 model OUT that ONNX Runtime\n"
     "runs too: weights int8 (symmetric, per tensor or --per-channel), activations\n"
     "uint8.  --format qdq (default) puts QuantizeLinear/DequantizeLinear pairs\n"
     "around the FP32 ops; qoperator writes QLinearMatMul/QLinearConv (static) or\n"
     "MatMulInteger/ConvInteger after DynamicQuantizeLinear (dynamic).  --mode static\n"
     "(the default with --calibration) measures activation ranges on SRC: records\n"
     "of any batch source (csv:, jsonl:, sqlite:, postgresql:...) mapped by --spec or\n"
     "the default mapping, or a .npy/.pb tensor of input rows; --method picks how a\n"
     "range is read from them.  --mode dynamic (the default without) quantizes\n"
     "activations at run time.  --exclude keeps a node (by name) in FP32.\n"
     "--reduce-range quantizes weights to [-64, 64] (7 bits), as ONNX Runtime's\n"
     "reduce_range: its kernels on CPUs without VNNI (vpmaddubsw) then cannot\n"
     "saturate; Infera's are exact either way.  --quantize-attention (static mode)\n"
     "also quantizes the MatMuls of two activations -- attention's Q x K^T and\n"
     "P x V, as ONNX Runtime's quantize_static does -- which Infera runs as one\n"
     "INT8 attention op; off by default: on the bench encoder it costs 1.7 points\n"
     "of top-1 agreement (P in 8 bits) and gains no speed.  Prints a\n"
     "report: nodes quantized and excluded, size before and after.\n"
     "--sensitivity adds which layers lose accuracy: each node quantized alone\n"
     "(the same ranges and options) is run beside the FP32 model over the\n"
     "calibration records (--calibration is needed, in dynamic mode too), and a\n"
     "table lists, worst first, its SQNR in dB (10 log10 of signal over error\n"
     "energy on the float outputs), max abs error and top-1 agreement (argmax of\n"
     "the last dim), then the same for every node quantized.  --min-sqnr DB\n"
     "(implies it) keeps each node below DB in FP32 in OUT, with --exclude's.\n"
     "--sensitivity-json FILE writes the table as JSON.  See docs/compression.md.\n"},
    {"compile", cmd_compile, "compile a model into a bundle (edge: mmap-able, no protobuf, checked)",
     "usage: infera compile REF -o OUT [--target x86_64|x86_64-avx2|aarch64] [--max-batch N] [--c-source]\n"
     "Loads and optimises REF (an .onnx file, a registry NAME[@VERSION|@ALIAS] or a bundle)\n"
     "and writes OUT, a bundle: the optimised graph, its weights (64-byte aligned, used in\n"
     "place when the file is mapped), the largest batch it will run (--max-batch, default 1:\n"
     "the edge runtime plans and warms up for it), the pipeline spec (the registry version's or <model>.pipeline.json) "
     "and\n"
     "the source model's SHA-256.  It loads without protobuf or a JSON parser and checks\n"
     "its magic, format version, target and CRC32C.  Every command that takes a model\n"
     "takes a bundle, with outputs identical to the source model's.  --target (default:\n"
     "this host) is checked at load: x86_64-avx2 needs AVX2/FMA.  --c-source writes OUT as\n"
     "a C file: the bundle as an aligned array and `const void *infera_bundle_<OUT stem>(size_t *)`,\n"
     "for programs linking libinfera_edge.a.  See docs/edge.md.\n"},
    {"tokenize", cmd_tokenize, "token ids of a text for a GGUF language model",
     "usage: infera tokenize REF --text TEXT [--json]\n"
     "\n"
     "Prints the token ids of TEXT as `infera generate` feeds them to the model REF\n"
     "(a GGUF file): BOS/EOS as its tokenizer.ggml.add_bos_token / add_eos_token say,\n"
     "special tokens written in the text (e.g. <|im_start|>) recognised.  With --json,\n"
     "prints {\"tokens\":[...]}.  Tokenizers: SentencePiece (llama) and byte-level BPE\n"
     "(gpt2) with the common pre-tokenizers; see docs/llm.md.\n"},
    {"generate", cmd_generate, "generate text with a GGUF language model (llama architecture)",
     "usage: infera generate REF --prompt TEXT [--max-tokens N] [--temperature T] [--top-k K]\n"
     "                       [--top-p P] [--seed S] [--draft REF] [--draft-tokens K] [--ctx N]\n"
     "                       [--threads N] [--json]\n"
     "\n"
     "Runs the GGUF model REF on TEXT (tokenized as `infera tokenize` does) and streams the\n"
     "completion to stdout as it is made.  Stops at an end-of-generation token, after\n"
     "--max-tokens (default 128), or when the context (--ctx, default the model's, at most\n"
     "4096) is full.  --temperature 0 (the default) is greedy; otherwise tokens are sampled\n"
     "after --top-k (default 40; 0 = off) and --top-p (default 0.95) with the generator\n"
     "seeded by --seed (default 0).  --draft REF: speculative decoding with a smaller model\n"
     "of the same vocabulary proposing --draft-tokens (default 4) tokens per step; greedy\n"
     "output is identical to the model's alone.  --json prints one object instead:\n"
     "{\"text\",\"tokens\",\"prompt_tokens\",\"completion_tokens\",\"ttft_ms\",\"tpot_ms\",\n"
     "\"tokens_per_s\",\"draft\":{\"proposed\",\"accepted\",\"acceptance_rate\"} or null}.\n"
     "Weights: f32, f16, q8_0, q4_0, q4_1.  See docs/llm.md.\n"},
    {"help", cmd_help, "show help for a command", "usage: infera help [command]\n"},
};
const int cli_n_commands = (int)(sizeof cli_commands / sizeof cli_commands[0]);

static void print_overview(FILE *f) {
    fprintf(f, "infera %s -- ONNX inference engine\n\nusage: infera <command> [options]\n\ncommands:\n", inf_version());
    for (int i = 0; i < cli_n_commands; i++) fprintf(f, "  %-12s %s\n", cli_commands[i].name, cli_commands[i].summary);
    fprintf(f, "\nRun 'infera help <command>' for a command's options.\n");
}

int cmd_help(int argc, char **argv) {
    if (argc < 2) {
        print_overview(stdout);
        return 0;
    }
    for (int i = 0; i < cli_n_commands; i++)
        if (!strcmp(argv[1], cli_commands[i].name)) {
            fputs(cli_commands[i].usage, stdout);
            return 0;
        }
    return cli_usage("help", "unknown command '%s'", argv[1]);
}

int main(int argc, char **argv) {
    if (cli_take_global_options(&argc, argv)) return 2;
    if (argc < 2) {
        print_overview(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
        printf("infera %s\n", inf_version());
        return 0;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) return cmd_help(1, argv);
    for (int i = 0; i < cli_n_commands; i++) {
        if (strcmp(argv[1], cli_commands[i].name)) continue;
        for (int k = 2; k < argc; k++)
            if (!strcmp(argv[k], "--help") || !strcmp(argv[k], "-h")) {
                fputs(cli_commands[i].usage, stdout);
                return 0;
            }
        return cli_commands[i].fn(argc - 1, argv + 1);
    }
    fprintf(stderr, "infera: unknown command '%s' (try 'infera help')\n", argv[1]);
    return 2;
}
