/*
 * test_chat_templates.c -- the chat formats of the OpenAI chat endpoint (inf__oai_render_chat, openai_request.c)
 * against llama.cpp's own test vectors: the conversation and the expected_output strings of its
 * tests/test-chat-template.cpp (llama.cpp from npm node-llama-cpp@3.21.1's bundle), copied here with the templates
 * that select them -- ChatML (teknium/OpenHermes-2.5-Mistral-7B), Llama-3, Phi-3-mini and google/gemma-7b-it --
 * so each rendering is byte for byte what llama.cpp's llm_chat_apply_template writes.  Plus a Gemma conversation
 * with two system messages and a system message after a turn (llama.cpp's rule: joined, put before the next
 * user turn's content).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/openai_request.h"

#include "../check.h"

/* llama.cpp's conversation (test-chat-template.cpp, main_automated_tests) */
static const char *const conversation =
    "[{\"role\":\"system\",\"content\":\"You are a helpful assistant\"},{\"role\":\"user\",\"content\":\"Hello\"},"
    "{\"role\":\"assistant\",\"content\":\"Hi there\"},{\"role\":\"user\",\"content\":\"Who are you\"},"
    "{\"role\":\"assistant\",\"content\":\"   I am an assistant   \"},{\"role\":\"user\",\"content\":\"Another "
    "question\"}]";

typedef struct vector {
    const char *name, *tpl, *expected;
} vector;

static const vector vectors[] = {
    {"teknium/OpenHermes-2.5-Mistral-7B (ChatML)",
     "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + "
     "'\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}",
     "<|im_start|>system\nYou are a helpful assistant<|im_end|>\n<|im_start|>user\nHello<|im_end|>\n<|im_start|>"
     "assistant\nHi there<|im_end|>\n<|im_start|>user\nWho are you<|im_end|>\n<|im_start|>assistant\n   I am an "
     "assistant   <|im_end|>\n<|im_start|>user\nAnother question<|im_end|>\n<|im_start|>assistant\n"},
    {"Llama-3",
     "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = '<|start_header_id|>' + "
     "message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' %}{% if loop.index0 == 0 "
     "%}{% set content = bos_token + content %}{% endif %}{{ content }}{% endfor %}{{ "
     "'<|start_header_id|>assistant<|end_header_id|>\n\n' }}",
     "<|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant<|eot_id|><|start_header_id|>user<|"
     "end_header_id|>\n\nHello<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nHi "
     "there<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWho are "
     "you<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\nI am an "
     "assistant<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nAnother "
     "question<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"},
    {"Phi-3-mini",
     "{{ bos_token }}{% for message in messages %}{% if (message['role'] == 'user') %}{{'<|user|>' + '\n' + "
     "message['content'] + '<|end|>' + '\n' + '<|assistant|>' + '\n'}}{% elif (message['role'] == 'assistant') "
     "%}{{message['content'] + '<|end|>' + '\n'}}{% endif %}{% endfor %}",
     "<|system|>\nYou are a helpful assistant<|end|>\n<|user|>\nHello<|end|>\n<|assistant|>\nHi "
     "there<|end|>\n<|user|>\nWho are you<|end|>\n<|assistant|>\n   I am an assistant   <|end|>\n<|user|>\nAnother "
     "question<|end|>\n<|assistant|>\n"},
    {"google/gemma-7b-it",
     "{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for "
     "message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ "
     "raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if "
     "(message['role'] == 'assistant') %}{% set role = 'model' %}{% else %}{% set role = message['role'] %}{% endif "
     "%}{{ '<start_of_turn>' + role + '\\n' + message['content'] | trim + '<end_of_turn>\\n' }}{% endfor %}{% if "
     "add_generation_prompt %}{{'<start_of_turn>model\\n'}}{% endif %}",
     "<start_of_turn>user\nYou are a helpful assistant\n\nHello<end_of_turn>\n<start_of_turn>model\nHi "
     "there<end_of_turn>\n<start_of_turn>user\nWho are you<end_of_turn>\n<start_of_turn>model\nI am an "
     "assistant<end_of_turn>\n<start_of_turn>user\nAnother question<end_of_turn>\n<start_of_turn>model\n"},
};

static void expect_render(const char *name, const char *tpl, const char *messages_json, const char *expected) {
    cJSON *msgs = cJSON_Parse(messages_json);
    CHECK(msgs != NULL, "%s: the conversation parses", name);
    if (!msgs) return;
    srv_buf b = {0};
    inf__oai_render_chat(tpl, msgs, &b);
    CHECK(!b.oom && b.p && !strcmp(b.p, expected), "%s: rendered as llama.cpp does\n  got      '%s'\n  expected '%s'",
          name, b.p ? b.p : "(null)", expected);
    inf__serve_buf_free(&b);
    cJSON_Delete(msgs);
}

int main(void) {
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++)
        expect_render(vectors[i].name, vectors[i].tpl, conversation, vectors[i].expected);
    /* llama.cpp's Gemma rule on more system messages: joined (trimmed, no separator), before the next user turn */
    expect_render("gemma, two system messages, one after a turn", "<start_of_turn>",
                  "[{\"role\":\"system\",\"content\":\" A \"},{\"role\":\"system\",\"content\":\"B\"},"
                  "{\"role\":\"user\",\"content\":\"u1\"},{\"role\":\"assistant\",\"content\":\"a1\"},"
                  "{\"role\":\"system\",\"content\":\"C\"},{\"role\":\"assistant\",\"content\":\"a2\"},"
                  "{\"role\":\"user\",\"content\":\"u2\"}]",
                  "<start_of_turn>user\nAB\n\nu1<end_of_turn>\n<start_of_turn>model\na1<end_of_turn>\n"
                  "<start_of_turn>model\na2<end_of_turn>\n<start_of_turn>user\nC\n\nu2<end_of_turn>\n"
                  "<start_of_turn>model\n");
    /* no template, or one not recognised: ChatML, the documented default */
    expect_render("no template: ChatML", NULL, "[{\"role\":\"user\",\"content\":\"Hi\"}]",
                  "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    expect_render("<|assistant|> without <|end|>: not Phi-3 (ChatML)", "<|assistant|>",
                  "[{\"role\":\"user\",\"content\":\"Hi\"}]",
                  "<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n");
    return check_summary("chat templates");
}
