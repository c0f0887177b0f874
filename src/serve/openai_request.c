/*
 * openai_request.c -- decodes and checks an OpenAI request body for openai.c (openai_request.h): the JSON object,
 * the model, the sampling parameters, the prompt, the chat messages and their rendering through a chat template,
 * the embeddings' input.  Nothing here knows the server, the model or the connection.
 *
 * CHAT TEMPLATES are recognised, not interpreted (no Jinja), as llama.cpp recognises them: a template holding
 * "<|im_start|>" is ChatML, "<|start_header_id|>" llama-3, "[INST]" llama-2, "<start_of_turn>" Gemma, "<|assistant|>"
 * with "<|end|>" Phi-3; no template or another one: ChatML (docs/llm.md).
 */
#include "serve/openai_request.h"

#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(oai_fail *f, int status, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int fail(oai_fail *f, int status, const char *param, const char *code, const char *fmt, ...) {
    f->status = status;
    f->code = code;
    snprintf(f->param, sizeof f->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(f->message, sizeof f->message, fmt, ap);
    va_end(ap);
    return -1;
}

/* ---- the body ------------------------------------------------------------------ */

/* Whether JSON text s[0, n) holds a \u0000 escape (an odd run of backslashes
 * before "u0000"; an even run is escaped backslashes, then plain text).
 * cJSON decodes it into a NUL, which ends the C string it hands us: the
 * rest of a prompt would be cut without a word. */
static bool has_nul_escape(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\') continue;
        size_t run = 1;
        while (i + run < n && s[i + run] == '\\') run++;
        if (run % 2 == 1 && n - (i + run) >= 5 && !memcmp(s + i + run, "u0000", 5)) return true;
        i += run - 1;
    }
    return false;
}

int inf__oai_parse(const char *body, size_t n, oai_request *rq, oai_fail *f) {
    memset(rq, 0, sizeof *rq);
    cJSON *j = n ? cJSON_ParseWithLength(body, n) : NULL;
    if (!j || !cJSON_IsObject(j)) {
        cJSON_Delete(j);
        return fail(f, 400, NULL, NULL, "the request body is not a JSON object%s", n ? "" : " (it is empty)");
    }
    if (has_nul_escape(body, n)) {
        cJSON_Delete(j);
        return fail(f, 400, NULL, NULL,
                    "the request body has a NUL character (\\u0000) in a string: not supported (the text would "
                    "end there)");
    }
    const cJSON *m = cJSON_GetObjectItemCaseSensitive(j, "model");
    if (!cJSON_IsString(m)) {
        cJSON_Delete(j);
        return fail(f, 400, "model", NULL, "'model' is required and must be a string");
    }
    rq->json = j;
    rq->model = m->valuestring;
    return 0;
}

void inf__oai_request_free(oai_request *rq) {
    cJSON_Delete(rq->json);
    memset(rq, 0, sizeof *rq);
}

/* ---- sampling and limits (completions, chat) ----------------------------------- */

/* j[key] when given (not null): a number in [lo, hi] into *v. */
static int number_in(const cJSON *j, const char *key, double lo, double hi, double *v, oai_fail *f) {
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(j, key);
    if (!x || cJSON_IsNull(x)) return 0;
    if (!cJSON_IsNumber(x) || !(x->valuedouble >= lo && x->valuedouble <= hi))
        return fail(f, 400, key, NULL, "'%s' must be a number in [%g, %g]", key, lo, hi);
    *v = x->valuedouble;
    return 0;
}

static int check_stop(const cJSON *j, srv_llm_params *p, oai_fail *f) {
    const cJSON *stop = cJSON_GetObjectItemCaseSensitive(j, "stop");
    if (cJSON_IsString(stop)) {
        if (stop->valuestring[0]) p->stop[p->n_stop++] = stop->valuestring;
    } else if (cJSON_IsArray(stop)) {
        const cJSON *s;
        cJSON_ArrayForEach(s, stop) {
            if (!cJSON_IsString(s) || p->n_stop == 4)
                return fail(f, 400, "stop", NULL, "'stop' must be a string or an array of at most 4 strings");
            if (s->valuestring[0]) p->stop[p->n_stop++] = s->valuestring;
        }
    } else if (stop && !cJSON_IsNull(stop)) {
        return fail(f, 400, "stop", NULL, "'stop' must be a string or an array of at most 4 strings");
    }
    return 0;
}

static int check_params(oai_request *rq, oai_fail *f) {
    const cJSON *j = rq->json;
    double temperature = 1, top_p = 1, top_k = 0, seed = 0, n = 1, max_tokens = -1;
    if (number_in(j, "temperature", 0, 2, &temperature, f) || number_in(j, "top_p", 0, 1, &top_p, f) ||
        number_in(j, "top_k", -1, 1 << 30, &top_k, f) || number_in(j, "seed", -9.2e18, 9.2e18, &seed, f) ||
        number_in(j, "n", 1, 1 << 30, &n, f) || number_in(j, "max_tokens", 1, 1 << 30, &max_tokens, f))
        return -1;
    if (max_tokens < 0 && number_in(j, "max_completion_tokens", 1, 1 << 30, &max_tokens, f)) return -1;
    if (n != 1) return fail(f, 400, "n", NULL, "only n = 1 is supported (one choice per request); got %g", n);
    memset(&rq->p, 0, sizeof rq->p);
    rq->p.temperature = (float)temperature;
    rq->p.top_p = top_p <= 0 ? 1e-6f : (float)top_p;
    rq->p.top_k = top_k < 0 ? 0 : (int)top_k;
    rq->p.seed = (uint64_t)(int64_t)seed;
    rq->max_tokens_given = max_tokens > 0;
    rq->p.max_tokens = max_tokens > 0 ? (int)max_tokens : 0;
    if (check_stop(j, &rq->p, f)) return -1;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(j, "stream");
    if (st && !cJSON_IsBool(st) && !cJSON_IsNull(st)) return fail(f, 400, "stream", NULL, "'stream' must be a boolean");
    rq->stream = cJSON_IsTrue(st);
    const cJSON *so = cJSON_GetObjectItemCaseSensitive(j, "stream_options");
    rq->include_usage = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(so, "include_usage"));
    rq->p.stream = rq->stream;
    return 0;
}

/* ---- what each endpoint takes ---------------------------------------------------- */

/* completions: "prompt" -- a string, an array of one string, or an array of token ids. */
static int check_prompt(oai_request *rq, oai_fail *f) {
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(rq->json, "prompt");
    if (cJSON_IsArray(p) && cJSON_GetArraySize(p) == 1 && cJSON_IsString(cJSON_GetArrayItem(p, 0)))
        p = cJSON_GetArrayItem(p, 0);
    if (cJSON_IsString(p)) rq->prompt = p->valuestring;
    else if (cJSON_IsArray(p) && cJSON_GetArraySize(p) > 0 && cJSON_IsNumber(cJSON_GetArrayItem(p, 0)))
        rq->prompt_ids = p;
    else
        return fail(f, 400, "prompt", NULL,
                    "'prompt' is required: a string, an array of one string, or an array of token ids (several "
                    "prompts per request are not supported)");
    return 0;
}

int inf__oai_prompt_ids(const cJSON *prompt_ids, int n_vocab, int32_t **ids, int *n_ids, oai_fail *f) {
    int len = cJSON_GetArraySize(prompt_ids), k = 0;
    *ids = NULL, *n_ids = 0;
    int32_t *out = malloc((size_t)(len > 0 ? len : 1) * sizeof *out);
    if (!out) return fail(f, 503, NULL, NULL, "out of memory");
    const cJSON *x;
    cJSON_ArrayForEach(x, prompt_ids) {
        if (!cJSON_IsNumber(x) || !(x->valuedouble >= 0 && x->valuedouble < n_vocab) ||
            x->valuedouble != (double)(int32_t)x->valuedouble) {
            free(out);
            return fail(f, 400, "prompt", NULL, "prompt[%d] is not a token id of the vocabulary (0..%d)", k,
                        n_vocab - 1);
        }
        out[k++] = (int32_t)x->valuedouble;
    }
    *ids = out, *n_ids = k;
    return 0;
}

/* chat: "messages", [{role, content}] with string contents (or arrays of text parts, joined into one). */
static int check_messages(oai_request *rq, oai_fail *f) {
    cJSON *msgs = cJSON_GetObjectItemCaseSensitive(rq->json, "messages");
    if (!cJSON_IsArray(msgs) || cJSON_GetArraySize(msgs) == 0)
        return fail(f, 400, "messages", NULL, "'messages' is required: a non-empty array of {role, content}");
    int i = 0;
    cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        cJSON *role = cJSON_GetObjectItemCaseSensitive(m, "role");
        cJSON *content = cJSON_GetObjectItemCaseSensitive(m, "content");
        if (cJSON_IsArray(content)) { /* [{"type":"text","text":...}] -> one string */
            srv_buf b = {0};
            const cJSON *part;
            cJSON_ArrayForEach(part, content) {
                const cJSON *t = cJSON_GetObjectItemCaseSensitive(part, "text");
                if (cJSON_IsString(t)) inf__serve_buf_puts(&b, t->valuestring);
            }
            cJSON *s = b.oom ? NULL : cJSON_CreateString(b.p ? b.p : "");
            inf__serve_buf_free(&b);
            if (!s || !cJSON_ReplaceItemInObjectCaseSensitive(m, "content", s)) {
                cJSON_Delete(s);
                return fail(f, 503, NULL, NULL, "out of memory");
            }
            content = s;
        }
        if (!cJSON_IsString(role) || !cJSON_IsString(content)) {
            char param[32];
            snprintf(param, sizeof param, "messages[%d]", i);
            return fail(f, 400, param, NULL, "messages[%d] needs a string 'role' and a string 'content'", i);
        }
        i++;
    }
    rq->messages = msgs;
    return 0;
}

/* embeddings: "input", a string or a non-empty array of strings. */
static int check_input(oai_request *rq, oai_fail *f) {
    const cJSON *in = cJSON_GetObjectItemCaseSensitive(rq->json, "input");
    if (!cJSON_IsString(in) && !(cJSON_IsArray(in) && cJSON_GetArraySize(in) > 0))
        return fail(f, 400, "input", NULL, "'input' is required: a string or an array of strings");
    if (cJSON_IsArray(in)) {
        int i = 0;
        const cJSON *x;
        cJSON_ArrayForEach(x, in) {
            if (!cJSON_IsString(x)) return fail(f, 400, "input", NULL, "input[%d] must be a string", i);
            i++;
        }
    }
    rq->input = in;
    return 0;
}

int inf__oai_check(oai_request *rq, oai_kind kind, oai_fail *f) {
    switch (kind) {
    case OAI_COMPLETIONS: return check_params(rq, f) || check_prompt(rq, f) ? -1 : 0;
    case OAI_CHAT: return check_params(rq, f) || check_messages(rq, f) ? -1 : 0;
    case OAI_EMBEDDINGS: return check_input(rq, f);
    }
    return fail(f, 400, NULL, NULL, "unknown endpoint");
}

/* ---- chat templates ------------------------------------------------------------ */

typedef struct chat_format {
    const char *marker, *marker2; /* recognise the template (marker2: also needed, or NULL) */
    const char *name;
    const char *before_role, *after_role; /* around the role */
    const char *after_content;            /* ends a message */
    const char *generation;               /* opens the assistant's turn */
    bool trim;                            /* the content without its leading and trailing whitespace */
} chat_format;

/* As llama.cpp's llm_chat_apply_template writes them (its tests/test-chat-template.cpp vectors: test_chat_templates.c)
 */
static const chat_format formats[] = {
    {"<|im_start|>", NULL, "chatml", "<|im_start|>", "\n", "<|im_end|>\n", "<|im_start|>assistant\n", false},
    {"<|start_header_id|>", "<|end_header_id|>", "llama3", "<|start_header_id|>", "<|end_header_id|>\n\n", "<|eot_id|>",
     "<|start_header_id|>assistant<|end_header_id|>\n\n", true},
    {"<|assistant|>", "<|end|>", "phi3", "<|", "|>\n", "<|end|>\n", "<|assistant|>\n", false},
};

/* a string without its leading and trailing whitespace (as llama.cpp's trim: " \t\n\r\v\f"), into b */
static void put_trimmed(srv_buf *b, const char *s) {
    const char *ws = " \t\n\r\v\f";
    while (*s && strchr(ws, *s)) s++;
    size_t n = strlen(s);
    while (n && strchr(ws, s[n - 1])) n--;
    inf__serve_buf_printf(b, "%.*s", (int)(n > INT_MAX ? INT_MAX : n), s);
}

/* Gemma: <start_of_turn>user\ncontent<end_of_turn>\n ... <start_of_turn>model\n; "assistant" is "model", system
 * messages are joined and put before the next user turn's content (Gemma has no system role), contents trimmed */
static void render_gemma(const cJSON *msgs, srv_buf *b) {
    srv_buf sys = {0};
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        const char *role = cJSON_GetObjectItemCaseSensitive(m, "role")->valuestring;
        const char *content = cJSON_GetObjectItemCaseSensitive(m, "content")->valuestring;
        if (!strcmp(role, "system")) {
            put_trimmed(&sys, content);
            continue;
        }
        bool model = !strcmp(role, "assistant");
        inf__serve_buf_printf(b, "<start_of_turn>%s\n", model ? "model" : role);
        if (sys.n && !model) {
            inf__serve_buf_printf(b, "%.*s\n\n", (int)sys.n, sys.p);
            sys.n = 0;
        }
        put_trimmed(b, content);
        inf__serve_buf_puts(b, "<end_of_turn>\n");
    }
    inf__serve_buf_puts(b, "<start_of_turn>model\n");
    if (sys.oom) b->oom = 1;
    inf__serve_buf_free(&sys);
}

/* llama-2: [INST] <<SYS>>\nsystem\n<</SYS>>\n\nuser [/INST] assistant </s><s>[INST] ... */
static void render_llama2(const cJSON *msgs, srv_buf *b) {
    const char *sys = NULL;
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        const char *role = cJSON_GetObjectItemCaseSensitive(m, "role")->valuestring;
        const char *content = cJSON_GetObjectItemCaseSensitive(m, "content")->valuestring;
        if (!strcmp(role, "system")) {
            sys = content;
        } else if (!strcmp(role, "user")) {
            inf__serve_buf_puts(b, "[INST] ");
            if (sys) inf__serve_buf_printf(b, "<<SYS>>\n%s\n<</SYS>>\n\n", sys);
            sys = NULL;
            inf__serve_buf_printf(b, "%s [/INST]", content);
        } else {
            inf__serve_buf_printf(b, " %s </s><s>", content);
        }
    }
}

void inf__oai_render_chat(const char *tpl, const cJSON *msgs, srv_buf *b) {
    if (tpl && strstr(tpl, "[INST]") && !strstr(tpl, "<|im_start|>")) {
        render_llama2(msgs, b);
        return;
    }
    if (tpl && strstr(tpl, "<start_of_turn>")) {
        render_gemma(msgs, b);
        return;
    }
    const chat_format *f = &formats[0]; /* the default */
    for (size_t i = 0; tpl && i < sizeof formats / sizeof formats[0]; i++)
        if (strstr(tpl, formats[i].marker) && (!formats[i].marker2 || strstr(tpl, formats[i].marker2))) f = &formats[i];
    const cJSON *m;
    cJSON_ArrayForEach(m, msgs) {
        const char *content = cJSON_GetObjectItemCaseSensitive(m, "content")->valuestring;
        inf__serve_buf_puts(b, f->before_role);
        inf__serve_buf_puts(b, cJSON_GetObjectItemCaseSensitive(m, "role")->valuestring);
        inf__serve_buf_puts(b, f->after_role);
        if (f->trim) put_trimmed(b, content);
        else inf__serve_buf_puts(b, content);
        inf__serve_buf_puts(b, f->after_content);
    }
    inf__serve_buf_puts(b, f->generation);
}
