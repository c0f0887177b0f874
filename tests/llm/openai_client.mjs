// openai_client.mjs -- the OpenAI endpoint of `infera serve` driven by the real npm `openai` client
// (tests/llm/test_openai.sh).  Expected texts come from `infera generate --temperature 0 --json`
// (passed in EXPECT_JSON): the HTTP layer must add nothing and lose nothing.
import OpenAI from 'openai';

const base = process.env.BASE_URL, model = process.env.MODEL, N = Number(process.env.MAX_TOKENS);
const expect = JSON.parse(process.env.EXPECT_JSON);
const client = new OpenAI({ baseURL: base + '/v1', apiKey: 'unused', maxRetries: 0 });
let failed = 0;
const check = (ok, what, got) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${ok ? '' : ': ' + JSON.stringify(got)}`);
  if (!ok) failed++;
};

// (a) completions: non-streamed == streamed == the CLI
const c1 = await client.completions.create({ model, prompt: expect.prompt, max_tokens: N, temperature: 0 });
check(c1.choices[0].text === expect.text, 'completion text equals infera generate', [c1.choices[0].text, expect.text]);
check(c1.usage.prompt_tokens === expect.prompt_tokens && c1.usage.completion_tokens === expect.completion_tokens &&
      c1.usage.total_tokens === expect.prompt_tokens + expect.completion_tokens, 'completion usage', c1.usage);
let streamed = '', chunks = 0, finish = null;
const s1 = await client.completions.create({ model, prompt: expect.prompt, max_tokens: N, temperature: 0, stream: true });
for await (const ch of s1) { streamed += ch.choices[0]?.text ?? ''; chunks++; finish = ch.choices[0]?.finish_reason ?? finish; }
check(streamed === c1.choices[0].text, 'streamed completion equals non-streamed', [streamed, c1.choices[0].text]);
check(chunks >= 2 && finish === c1.choices[0].finish_reason, 'stream has several chunks and the finish reason', [chunks, finish]);

// chat: the template (ChatML for SmolLM2) rendered by the server == the CLI on the rendered prompt
const messages = [{ role: 'user', content: expect.chat_user }];
const c2 = await client.chat.completions.create({ model, messages, max_tokens: N, temperature: 0 });
check(c2.choices[0].message.content === expect.chat_text, 'chat content equals infera generate on the ChatML prompt',
      [c2.choices[0].message.content, expect.chat_text]);
check(c2.choices[0].message.role === 'assistant' && c2.object === 'chat.completion', 'chat shape', c2);
let chat = '', roles = 0;
const s2 = await client.chat.completions.create({ model, messages, max_tokens: N, temperature: 0, stream: true,
                                                  stream_options: { include_usage: true } });
let usage = null;
for await (const ch of s2) {
  if (ch.usage) usage = ch.usage;
  const d = ch.choices[0]?.delta;
  if (d?.role) roles++;
  chat += d?.content ?? '';
}
check(chat === c2.choices[0].message.content, 'streamed chat equals non-streamed', [chat, c2.choices[0].message.content]);
check(roles === 1 && usage && usage.total_tokens === c2.usage.total_tokens, 'one role delta; include_usage chunk', [roles, usage]);

// stop strings cut the text before the stop
const stop = expect.text.slice(3, 6);
const c3 = await client.completions.create({ model, prompt: expect.prompt, max_tokens: N, temperature: 0, stop: [stop] });
check(c3.choices[0].text === expect.text.slice(0, expect.text.indexOf(stop)) && c3.choices[0].finish_reason === 'stop',
      'stop string', [c3.choices[0].text, stop]);

// (b) 4 at once == sequential
const prompts = ['Once upon a time', 'The capital of France is', 'def add(a, b):', 'Water boils at'];
const seq = [];
for (const p of prompts) seq.push((await client.completions.create({ model, prompt: p, max_tokens: N, temperature: 0 })).choices[0].text);
const par = await Promise.all(prompts.map(p => client.completions.create({ model, prompt: p, max_tokens: N, temperature: 0 })));
check(par.every((r, i) => r.choices[0].text === seq[i]), '4 concurrent requests give the sequential texts', [par.map(r => r.choices[0].text), seq]);

// embeddings: unit length, deterministic, different texts differ
const e = await client.embeddings.create({ model, input: ['hello world', 'hello world', 'a completely different sentence'] });
const v = e.data.map(d => d.embedding);
const norm = Math.sqrt(v[0].reduce((s, x) => s + x * x, 0));
check(Math.abs(norm - 1) < 1e-4 && v[0].length === expect.n_embd, 'embedding is L2-normalised, n_embd long', [norm, v[0].length]);
check(v[0].every((x, i) => x === v[1][i]) && v[0].some((x, i) => x !== v[2][i]), 'embeddings deterministic and text-dependent', null);

// (c) errors in OpenAI's shape
const post = async (path, body) => {
  const r = await fetch(base + path, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body) });
  return [r.status, await r.json()];
};
const shaped = j => j.error && typeof j.error.message === 'string' && typeof j.error.type === 'string' && 'param' in j.error && 'code' in j.error;
const bad = [
  ['missing prompt', '/v1/completions', { model }, 400, 'prompt'],
  ['too many tokens', '/v1/completions', { model, prompt: 'hi', max_tokens: 100000 }, 400, 'max_tokens'],
  ['prompt longer than the context (--llm-ctx 512)', '/v1/completions', { model, prompt: 'word '.repeat(600) }, 400, 'prompt'],
  ['unknown model', '/v1/completions', { model: 'nope', prompt: 'hi' }, 404, 'model'],
  ['n=2', '/v1/completions', { model, prompt: 'hi', n: 2 }, 400, 'n'],
  ['bad JSON', '/v1/completions', '{"model": ', 400, null],
  ['chat without messages', '/v1/chat/completions', { model }, 400, 'messages'],
  ['temperature out of range', '/v1/chat/completions', { model, messages, temperature: 7 }, 400, 'temperature'],
];
for (const [what, path, body, status, param] of bad) {
  const [st, j] = await post(path, body);
  check(st === status && shaped(j) && j.error.param === param, `error: ${what} -> ${status}`, [st, j]);
}
try {
  await client.completions.create({ model: 'nope', prompt: 'hi' });
  check(false, 'the client raises NotFoundError', null);
} catch (err) { check(err.status === 404, 'the client raises a 404 error', err.status); }

// /v1/models through the client: the served name, OpenAI's list shape
const listed = [];
for await (const mm of client.models.list()) listed.push(mm);
check(listed.length === 1 && listed[0].id === model && listed[0].object === 'model' && listed[0].max_model_len === 512,
      'client.models.list() names the served model (max_model_len = --llm-ctx)', listed);
const one = await client.models.retrieve(model);
check(one.id === model && one.object === 'model', 'client.models.retrieve(model) gives the model', one);
try {
  await client.models.retrieve('nope');
  check(false, 'retrieve of an unknown model raises', null);
} catch (err) { check(err.status === 404 && err.code === 'model_not_found', 'retrieve of an unknown model: 404 model_not_found', [err.status, err.code]); }

// (d) a streaming client that disconnects frees its slot
const ac = new AbortController();
const long = await client.completions.create({ model, prompt: 'Tell me a long story', max_tokens: 200, temperature: 0, stream: true },
                                             { signal: ac.signal });
try { for await (const ch of long) { ac.abort(); } } catch (_) { /* aborted */ }
let running = -1;
for (let i = 0; i < 100 && running !== 0; i++) {
  await new Promise(r => setTimeout(r, 100));
  const m = await (await fetch(base + '/metrics')).text();
  running = Number(/vllm:num_requests_running\{model_name="[^"]*"\} (\d+)/.exec(m)?.[1] ?? -1);
}
check(running === 0, 'vllm:num_requests_running returns to 0 after a client disconnects', running);
const after = await client.completions.create({ model, prompt: expect.prompt, max_tokens: N, temperature: 0 });
check(after.choices[0].text === expect.text, 'the next request still works', after.choices[0].text);
const m = await (await fetch(base + '/metrics')).text();
check(/vllm:generation_tokens_total\{model_name="[^"]*"\} [1-9]/.test(m) && /vllm:time_to_first_token_seconds_bucket/.test(m) &&
      /vllm:e2e_request_latency_seconds_count/.test(m) && /vllm:prompt_tokens_total/.test(m), 'vLLM metrics exposed', null);

// TTFT over HTTP (streamed, first chunk) for the report
const t0 = performance.now();
const s3 = await client.completions.create({ model, prompt: expect.prompt, max_tokens: 2, temperature: 0, stream: true });
let ttft = null;
for await (const ch of s3) { if (ttft === null) ttft = performance.now() - t0; }
console.log(`ttft_http_ms ${ttft.toFixed(2)} ttft_cli_ms ${expect.ttft_ms}`);
process.exit(failed ? 1 : 0);
