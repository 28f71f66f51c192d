// What the client does when the other end is not a healthy membank: nothing listening, a
// server that never answers, a proxy's HTML page, a stream cut short, and the byte-level
// shapes of server-sent events. Plain node:http and node:net servers on loopback stand in
// for the odd ends; no membank binary is needed here.

import assert from 'node:assert/strict';
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net';
import { after, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { MembankClient, MembankError, isMembankError, type ChatEvent } from '../src/index.js';
import { lines, serverSentEvents } from '../src/stream.js';
import { freePort } from '../tools/server.js';
import { collect, rejects, timed } from './support.js';

type Handler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

const servers: Server[] = [];
// The fakes' waits end with the tests, so no timer keeps the process alive afterwards.
const stopping = new AbortController();
const pause = (ms: number): Promise<void> => sleep(ms, undefined, { signal: stopping.signal });
after(async () => {
  stopping.abort();
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
});

/** A loopback HTTP server answering with `handler`; returns its base URL. */
async function fake(handler: Handler): Promise<string> {
  const server = createHttpServer((req, res) => {
    req.resume();
    req.on('end', () => {
      Promise.resolve(handler(req, res)).catch(() => res.destroy());
    });
  });
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** An SSE answer written in the given pieces, with a pause between them. */
function sse(pieces: string[], pauseMs = 5): Handler {
  return async (_req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/event-stream' });
    for (const piece of pieces) {
      res.write(piece);
      await pause(pauseMs);
    }
    res.end();
  };
}

const DONE = { reply: 'Hi there', used: [], recalled: [], strengthened: [], recall_mode: 'retrieved', model: 'stub', omitted: 0, prompt: '', query_id: 'q', turn: { id: 't' } };

describe('no membank at the other end', () => {
  test('nothing listening: `unreachable` at once, status 0, naming the address', async () => {
    const port = await freePort();
    const membank = new MembankClient({ baseUrl: `http://127.0.0.1:${port}`, timeout: 5_000 });
    const [err, ms] = await timed(() => rejects(membank.recall('alice', 'cat'), 'unreachable', 0));
    assert.match(err.message, new RegExp(`127\\.0\\.0\\.1:${port}`));
    assert.match(err.message, /ECONNREFUSED|refused/);
    assert.ok(ms < 3_000, `refused in ${Math.round(ms)} ms`);
    await rejects(collect(membank.chatStream('alice', 'hi')), 'unreachable', 0);
    await rejects(collect(membank.export('alice')), 'unreachable', 0);
  });

  test('a server that accepts and never answers: `timeout` after the client\'s timeout', async () => {
    const held: Socket[] = [];
    const silent = createNetServer((socket) => held.push(socket));
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
    try {
      const base = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
      const membank = new MembankClient({ baseUrl: base, timeout: 300 });
      const [err, ms] = await timed(() => rejects(membank.note('alice', 'hello'), 'timeout', 0));
      assert.match(err.message, /300 ms/);
      assert.ok(ms >= 250 && ms < 3_000, `gave up after ${Math.round(ms)} ms`);
      // A per-request timeout overrides the client's.
      const [, shorter] = await timed(() => rejects(membank.list('alice', {}, { timeout: 100 }), 'timeout', 0));
      assert.ok(shorter < 1_000, `gave up after ${Math.round(shorter)} ms`);
      await rejects(collect(membank.chatStream('alice', 'hi')), 'timeout', 0);
    } finally {
      for (const socket of held) socket.destroy();
      await new Promise((r) => silent.close(r));
    }
  });

  test('the caller\'s AbortSignal: `aborted`, even when it fired before the call', async () => {
    const base = await fake(async (_req, res) => {
      await pause(2_000);
      res.end('{}');
    });
    const membank = new MembankClient({ baseUrl: base });
    const [, ms] = await timed(() => rejects(membank.recall('alice', 'cat', { signal: AbortSignal.timeout(100) }), 'aborted', 0));
    assert.ok(ms < 1_500);
    const gone = new AbortController();
    gone.abort();
    await rejects(membank.recall('alice', 'cat', { signal: gone.signal }), 'aborted', 0);
  });

  test('a proxy\'s HTML error page, a non-JSON success and an error of another shape: `invalid_response`', async () => {
    const html = await fake((_req, res) => {
      res.writeHead(502, { 'Content-Type': 'text/html' });
      res.end('<html><body><h1>502 Bad Gateway</h1></body></html>');
    });
    const err = await rejects(new MembankClient({ baseUrl: html }).recall('alice', 'cat'), 'invalid_response', 502);
    assert.match(err.message, /502 Bad Gateway/);
    const text = await fake((_req, res) => {
      res.end('OK');
    });
    await rejects(new MembankClient({ baseUrl: text }).note('alice', 'hello'), 'invalid_response', 200);
    const other = await fake((_req, res) => {
      res.writeHead(400, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ message: 'not membank' }));
    });
    await rejects(new MembankClient({ baseUrl: other }).note('alice', 'hello'), 'invalid_response', 400);
  });

  test('a membank error carries code, status, message, Retry-After and the request', async () => {
    const limited = await fake((_req, res) => {
      res.writeHead(429, { 'Content-Type': 'application/json', 'Retry-After': '7' });
      res.end(JSON.stringify({ error: { code: 'rate_limited', message: 'rate limit exceeded; retry in 7 s' } }));
    });
    const err = await rejects(new MembankClient({ baseUrl: limited }).forget('alice', '0192f0c4-0000-7000-8000-000000000000', 'why?'), 'rate_limited', 429);
    assert.equal(err.retryAfter, 7);
    assert.equal(err.message, 'rate limit exceeded; retry in 7 s');
    assert.equal(err.request, 'POST /v1/users/alice/memories/0192f0c4-0000-7000-8000-000000000000/forget?reason=why%3F');
    assert.ok(isMembankError(err, 'rate_limited'));
    assert.ok(!isMembankError(err, 'not_found'));
    assert.ok(err instanceof Error && err.name === 'MembankError');
  });

  test('the request the client sends: method, path encoding, headers, body', async () => {
    const seen: { method?: string; url?: string; headers?: IncomingMessage['headers'] }[] = [];
    const base = await fake((req, res) => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"memories":[]}');
    });
    const membank = new MembankClient({ baseUrl: `${base}/prefix/`, apiKey: 'mbk_abc_def', tenant: 'acme', headers: { 'X-Trace': '1' } });
    await membank.list('a b/c?d#e%', { status: ['active', 'archived'], pinned: true, limit: 5 });
    await membank.rememberBatch('u', ['one'], { idempotencyKey: 'k-1' });
    assert.equal(seen[0]?.method, 'GET');
    assert.equal(seen[0]?.url, '/prefix/v1/users/a%20b%2Fc%3Fd%23e%25/memories?pinned=true&limit=5&status=active%2Carchived');
    assert.equal(seen[0]?.headers?.authorization, 'Bearer mbk_abc_def');
    assert.equal(seen[0]?.headers?.['x-membank-tenant'], 'acme');
    assert.equal(seen[0]?.headers?.['x-trace'], '1');
    assert.equal(seen[1]?.method, 'POST');
    assert.equal(seen[1]?.headers?.['idempotency-key'], 'k-1');
    assert.equal(seen[1]?.headers?.['content-type'], 'application/json');
    // A key that is no header value is refused before sending, not reported as unreachable.
    await rejects(membank.note('u', 'x', { idempotencyKey: 'has space' }), 'invalid_input', 0);
    await rejects(membank.note('u', 'x', { idempotencyKey: 'é' }), 'invalid_input', 0);
    assert.equal(seen.length, 2);
  });

  test('constructor options are checked', () => {
    assert.throws(() => new MembankClient({ baseUrl: 'not a url' }), TypeError);
    assert.throws(() => new MembankClient({ baseUrl: 'ftp://example.com' }), TypeError);
    assert.throws(() => new MembankClient({ baseUrl: 'http://x', timeout: -1 }), TypeError);
    assert.throws(() => new MembankClient({ baseUrl: 'http://x', apiKey: 'two\nlines' }), TypeError);
    assert.throws(() => new MembankClient({ baseUrl: 'http://x', tenant: 'acme\r\nX-Evil: 1' }), TypeError);
    assert.throws(() => new MembankClient({ baseUrl: 'http://x', headers: { 'X-Bad': 'a\nb' } }), TypeError);
    assert.equal(new MembankClient({ baseUrl: 'http://127.0.0.1:8787/' }).baseUrl, 'http://127.0.0.1:8787');
  });
});

describe('streams at the byte level', () => {
  const events = (base: string): Promise<ChatEvent[]> => collect(new MembankClient({ baseUrl: base, timeout: 2_000 }).chatStream('alice', 'hi'));

  test('events split anywhere, CRLF and CR line ends, comments, multi-line data, unknown events', async () => {
    const whole =
      ': keep-alive\r\n\r\n' +
      'event: recalled\r\ndata: {"memories":[]}\r\n\r\n' +
      'event: delta\rdata: {"text":"Hi"}\r\r' +
      'event: future_event\ndata: {"ignored":true}\n\n' +
      'event: delta\ndata: {"text":\ndata: " there"}\n\n' +
      `event: done\ndata: ${JSON.stringify(DONE)}\n\n`;
    // One byte at a time: every boundary (inside a CRLF, inside a UTF-8 sequence) is crossed.
    const base = await fake(sse([...Buffer.from(whole)].map((b) => String.fromCharCode(b)), 0));
    const got = await events(base);
    assert.deepEqual(
      got.map((e) => e.type),
      ['recalled', 'delta', 'delta', 'done'],
    );
    assert.deepEqual(got[2], { type: 'delta', text: ' there' }, 'data lines are joined with a newline, which JSON reads as space');
    assert.equal((got[3] as Extract<ChatEvent, { type: 'done' }>).result.reply, 'Hi there');
  });

  test('an error event is thrown with its code; a stream cut before done is `interrupted`', async () => {
    const failing = await fake(sse(['event: recalled\ndata: {"memories":[]}\n\n', 'event: error\ndata: {"error":{"code":"unavailable","message":"the LLM call failed (auth); try again later"}}\n\n']));
    const err = await rejects(events(failing), 'unavailable', 200);
    assert.match(err.message, /LLM/);
    const cut = await fake(sse(['event: recalled\ndata: {"memories":[]}\n\n', 'event: delta\ndata: {"text":"Hi"}\n\n', 'event: delta\ndata: {"te']));
    const interrupted = await rejects(events(cut), 'interrupted', 200);
    assert.match(interrupted.message, /before its done event/);
    const garbage = await fake(sse(['event: delta\ndata: not json\n\n']));
    await rejects(events(garbage), 'invalid_response', 200);
  });

  test('a connection reset midway is `interrupted`; a stall midway is `timeout`', async () => {
    const reset = await fake(async (req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('event: recalled\ndata: {"memories":[]}\n\n');
      await pause(50);
      req.socket.destroy();
    });
    await rejects(events(reset), 'interrupted');
    const stall = await fake(async (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/event-stream' });
      res.write('event: recalled\ndata: {"memories":[]}\n\n');
      await pause(5_000);
      res.end();
    });
    const membank = new MembankClient({ baseUrl: stall, timeout: 300 });
    const seen: string[] = [];
    const [, ms] = await timed(() =>
      rejects(async () => {
        for await (const event of membank.chatStream('alice', 'hi')) seen.push(event.type);
      }, 'timeout'),
    );
    assert.deepEqual(seen, ['recalled']);
    assert.ok(ms < 2_000, `gave up after ${Math.round(ms)} ms`);
  });

  test('an export cut before its end record is `interrupted`', async () => {
    const cut = await fake((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/x-ndjson' });
      res.end('{"format":"membank-export","version":1,"vectors":false}\n{"type":"user","user":"alice"}\n');
    });
    const membank = new MembankClient({ baseUrl: cut });
    const seen: unknown[] = [];
    await rejects(async () => {
      for await (const record of membank.export('alice')) seen.push(record);
    }, 'interrupted', 200);
    assert.equal(seen.length, 2, 'what arrived was yielded first');
  });

  test('lines() and serverSentEvents() on their own', async () => {
    const body = (pieces: string[]): ReadableStream<Uint8Array> =>
      new ReadableStream({
        start(controller) {
          for (const p of pieces) controller.enqueue(new TextEncoder().encode(p));
          controller.close();
        },
      });
    assert.deepEqual(await collect(lines(body(['a\r', '\nb\r', 'c\n', '\n', 'é', 'x']))), ['a', 'b', 'c', '', 'éx']);
    // A multi-byte character split across two pieces decodes whole.
    const bytes = new TextEncoder().encode('🐈\n');
    const split = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(bytes.slice(0, 2));
        controller.enqueue(bytes.slice(2));
        controller.close();
      },
    });
    assert.deepEqual(await collect(lines(split)), ['🐈']);
    const parsed = await collect(serverSentEvents(lines(body(['data: one\n\n', 'event:x\ndata\ndata:  two\n\n', 'data: cut']))));
    assert.deepEqual(parsed, [
      { event: 'message', data: 'one' },
      { event: 'x', data: '\n two' },
    ]);
  });
});

test('MembankError is a plain Error subclass that survives a throw', () => {
  const err = new MembankError('not_found', 'memory x not found', { status: 404 });
  assert.ok(err instanceof Error);
  assert.equal(err.status, 404);
  assert.equal(err.retryAfter, undefined);
  assert.match(String(err), /MembankError: memory x not found/);
});
