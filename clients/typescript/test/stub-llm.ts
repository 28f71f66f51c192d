// A scripted OpenAI-compatible chat endpoint on loopback: the same stub the web app's
// browser tests use (crates/membank-server/web/e2e/harness.mjs, `startStubLlm`), in
// TypeScript. Streaming requests (`"stream": true`) get the reply word by word as
// server-sent events; others one JSON completion. `reply(request)` chooses the text, or
// returns `{status, message}` for an error answer (a 4xx is not retried by membank, so it
// fails the chat at once). No real model is ever called.

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export interface StubRequest {
  model: string;
  stream?: boolean;
  messages: { role: string; content: unknown }[];
}

export type StubReply = string | { status: number; message: string };

export interface StubLlm {
  /** For MEMBANK_LLM_BASE_URL: `http://127.0.0.1:PORT/v1`. */
  baseUrl: string;
  requests: StubRequest[];
  stop(): Promise<void>;
}

/** The text of a request's last message (what the person said, as the prompt puts it). */
export function lastMessage(request: StubRequest): string {
  const last = request.messages[request.messages.length - 1]?.content;
  return typeof last === 'string' ? last : '';
}

/** The whole prompt as text. */
export function promptText(request: StubRequest): string {
  return request.messages.map((m) => (typeof m.content === 'string' ? m.content : '')).join('\n');
}

export async function startStubLlm({ reply, delayMs = 20 }: { reply: (request: StubRequest) => StubReply; delayMs?: number }): Promise<StubLlm> {
  const requests: StubRequest[] = [];
  // Stopping the stub ends the replies it is still writing (their waits too, so a stopped
  // stub keeps no timer and the test process can exit).
  const stopping = new AbortController();
  const json = (res: ServerResponse, status: number, body: unknown): void => {
    res.writeHead(status, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const handle = async (req: IncomingMessage, res: ServerResponse, raw: string): Promise<void> => {
    if (req.method !== 'POST' || !req.url?.endsWith('/chat/completions')) {
      json(res, 404, { error: { message: `the stub has no ${req.method} ${req.url}` } });
      return;
    }
    let body: StubRequest;
    try {
      body = JSON.parse(raw) as StubRequest;
    } catch {
      json(res, 400, { error: { message: 'not JSON' } });
      return;
    }
    requests.push(body);
    const text = reply(body);
    if (typeof text === 'object') {
      json(res, text.status, { error: { message: text.message } });
      return;
    }
    if (body.stream) {
      res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' });
      for (const word of text.split(/(?<= )/)) {
        const chunk = { id: 'stub', object: 'chat.completion.chunk', model: body.model, choices: [{ index: 0, delta: { content: word }, finish_reason: null }] };
        if (res.destroyed) return;
        res.write(`data: ${JSON.stringify(chunk)}\n\n`);
        await sleep(delayMs, undefined, { signal: stopping.signal });
      }
      const last = { id: 'stub', object: 'chat.completion.chunk', model: body.model, choices: [{ index: 0, delta: {}, finish_reason: 'stop' }] };
      res.write(`data: ${JSON.stringify(last)}\n\n`);
      res.end('data: [DONE]\n\n');
    } else {
      json(res, 200, {
        id: 'stub',
        object: 'chat.completion',
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
        usage: { prompt_tokens: 10, completion_tokens: 10 },
      });
    }
  };
  const server = createServer((req, res) => {
    let raw = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => {
      raw += chunk;
    });
    req.on('end', () => {
      handle(req, res, raw).catch(() => {
        res.destroy();
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    stop: () =>
      new Promise<void>((r) => {
        stopping.abort();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
