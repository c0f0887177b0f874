/*
 * openai_request.h -- an OpenAI request body (/v1/completions, /v1/chat/completions, /v1/embeddings) decoded and
 * checked apart from the server that answers it, so that the decoder can be fuzzed on its own
 * (tests/fuzz/fuzz_http_request.c) and openai.c keeps to serving.
 *
 * Two steps, because the caller is authorized between them (a caller without the right learns nothing about the
 * parameters, as with OpenAI's API): inf__oai_parse takes the body (a JSON object, no \u0000 in a string, a string
 * "model"); inf__oai_check then takes the parameters of the endpoint.  A refusal fills an oai_fail in OpenAI's
 * terms (HTTP status, the parameter at fault, a code) that openai.c sends as {"error":{...}}.
 */
#ifndef INFERA_SERVE_OPENAI_REQUEST_H
#define INFERA_SERVE_OPENAI_REQUEST_H

#include <cjson/cJSON.h>
#include <stdint.h>

#include "serve/serve.h"

typedef enum { OAI_COMPLETIONS, OAI_CHAT, OAI_EMBEDDINGS } oai_kind;

typedef struct oai_fail {
    int status;       /* 400, or 503 when memory ran out */
    const char *code; /* OpenAI's "code" (NULL: null) */
    char param[32];   /* OpenAI's "param" ("" : null) */
    char message[INF_ERROR_MESSAGE_MAX];
} oai_fail;

typedef struct oai_request {
    cJSON *json;       /* the body, owned (inf__oai_request_free) */
    const char *model; /* the "model" string */
    srv_llm_params p;  /* sampling and limits (completions, chat); p.max_tokens 0 when not given */
    int stream, include_usage, max_tokens_given;
    const char *prompt;      /* completions: the prompt text, or NULL when prompt_ids is set */
    const cJSON *prompt_ids; /* completions: an array of numbers, checked by inf__oai_prompt_ids */
    const cJSON *messages;   /* chat: [{role, content}], every role and content a string (parts joined) */
    const cJSON *input;      /* embeddings: a string, or a non-empty array of strings */
} oai_request;

/* The body: 0, or -1 with *f filled (rq holds nothing to free then). */
int inf__oai_parse(const char *body, size_t n, oai_request *rq, oai_fail *f);
/* The parameters of that endpoint: 0, or -1 with *f filled. */
int inf__oai_check(oai_request *rq, oai_kind kind, oai_fail *f);
/* completions' token-id prompt as ids of a vocabulary of n_vocab: 0 and a malloc'd *ids, or -1 with *f filled. */
int inf__oai_prompt_ids(const cJSON *prompt_ids, int n_vocab, int32_t **ids, int *n_ids, oai_fail *f);
/* chat: the messages as the prompt text of the model's chat template (recognised, not interpreted: ChatML,
 * llama-3 or llama-2; ChatML when tpl is NULL or another one). */
void inf__oai_render_chat(const char *tpl, const cJSON *messages, srv_buf *b);
void inf__oai_request_free(oai_request *rq);

#endif
