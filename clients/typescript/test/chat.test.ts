// The companion through the client: a real `membank serve` whose LLM is the scripted stub
// (test/stub-llm.ts, the web app's stub in TypeScript; never a real model). The stream as
// typed events, the whole answer, a model failure midway, bad input before the stream, a
// consumer that leaves early, and the timeout between pieces.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { MembankClient, type ChatEvent } from '../src/index.js';
import { removeDir, startServer, tempDir, type RunningServer } from '../tools/server.js';
import { lastMessage, promptText, startStubLlm, type StubLlm, type StubRequest } from './stub-llm.js';
import { collect, rejects, timed } from './support.js';

/** Cites the memory about Miso by the label the prompt gave it; fails or dawdles on cue. */
function scriptedReply(request: StubRequest): string | { status: number; message: string } {
  const said = lastMessage(request);
  if (/model failure/.test(said)) return { status: 401, message: 'the stub refuses this key' };
  let label = 'M1';
  for (const block of promptText(request).split(/(?=\[M\d+\] )/)) {
    const m = /^\[(M\d+)\] /.exec(block);
    if (m?.[1] && /Miso/.test(block)) label = m[1];
  }
  return `From what you told me, your cat is called Miso [${label}]. I hope she is well.`;
}

describe('chat against a real membank serve with a stub LLM', () => {
  let dir: string;
  let server: RunningServer;
  let stub: StubLlm;
  let membank: MembankClient;

  before(async () => {
    dir = tempDir('membank-ts-chat');
    stub = await startStubLlm({ reply: scriptedReply, delayMs: 15 });
    server = await startServer({ dir, env: { MEMBANK_LLM_BASE_URL: stub.baseUrl, MEMBANK_LLM_MODEL: 'stub' } });
    membank = new MembankClient({ baseUrl: server.baseUrl, timeout: 20_000 });
    await membank.remember('carol', 'My cat is Miso');
    await membank.remember('carol', 'I am training for a marathon in October');
  });

  after(async () => {
    await server?.stop();
    await stub?.stop();
    if (dir) removeDir(dir);
  });

  test('chatStream: recalled, then deltas that add up to the reply, then done', async () => {
    const before = (await membank.list('carol')).memories.length;
    const events = await collect(membank.chatStream('carol', "What is my cat's name?"));
    const types = events.map((e) => e.type);
    assert.equal(types[0], 'recalled');
    assert.equal(types[types.length - 1], 'done');
    assert.ok(types.filter((t) => t === 'delta').length >= 5, `the reply arrives in pieces: ${types.join(' ')}`);
    assert.deepEqual([...new Set(types)], ['recalled', 'delta', 'done'], 'in that order, each kind together');

    const recalled = events[0] as Extract<ChatEvent, { type: 'recalled' }>;
    const miso = recalled.memories.find((m) => m.content?.includes('Miso'));
    assert.ok(miso, 'the memory about Miso was put into the prompt');
    assert.match(miso.label, /^M\d+$/);

    const done = events[events.length - 1] as Extract<ChatEvent, { type: 'done' }>;
    const text = events.map((e) => (e.type === 'delta' ? e.text : '')).join('');
    assert.equal(text, done.result.reply);
    assert.match(done.result.reply, /Miso/);
    assert.deepEqual(done.result.used.map((m) => m.id), [miso.id], 'the cited memory is the one used');
    assert.equal(done.result.turn.kind, 'turn');
    assert.equal((await membank.list('carol')).memories.length, before + 1, 'the exchange was stored as a turn');
  });

  test('chat: the whole answer at once, with an Idempotency-Key asking the model once', async () => {
    const asked = stub.requests.length;
    const first = await membank.chat('carol', { message: 'Remind me of my cat?', k: 3 }, { idempotencyKey: 'ts-chat-1' });
    assert.match(first.reply, /Miso/);
    assert.ok(first.recalled.length <= 3);
    const again = await membank.chat('carol', { message: 'Remind me of my cat?', k: 3 }, { idempotencyKey: 'ts-chat-1' });
    assert.equal(again.turn.id, first.turn.id);
    assert.equal(stub.requests.length, asked + 1, 'the retry did not ask the model again');
  });

  test('a model failure midway is thrown with the server\'s code, after recalled, and stores nothing', async () => {
    const before = (await membank.list('carol')).memories.length;
    const seen: string[] = [];
    const err = await rejects(async () => {
      for await (const event of membank.chatStream('carol', 'please trigger a model failure')) seen.push(event.type);
    }, 'unavailable', 200);
    assert.deepEqual(seen, ['recalled']);
    assert.match(err.message, /LLM/);
    assert.equal((await membank.list('carol')).memories.length, before, 'nothing was stored');
    // The same failure without streaming is an ordinary 503.
    await rejects(membank.chat('carol', 'another model failure'), 'unavailable', 503);
  });

  test('bad input is refused before the stream starts', async () => {
    const events: ChatEvent[] = [];
    await rejects(async () => {
      for await (const event of membank.chatStream('carol', '   ')) events.push(event);
    }, 'invalid_input', 422);
    await rejects(collect(membank.chatStream('carol', { message: 'hi', k: 0 })), 'invalid_input', 422);
    await rejects(collect(membank.chatStream('carol', { message: 'hi', now: 'someday' })), 'invalid_input', 422);
    await rejects(collect(membank.chatStream('', 'hi')), 'invalid_input', 0);
    assert.deepEqual(events, []);
  });

  test('leaving the loop early stops reading; the server still stores the exchange', async () => {
    const before = (await membank.list('carol')).memories.length;
    for await (const event of membank.chatStream('carol', 'What do you know about my cat?')) {
      if (event.type === 'delta') break;
    }
    // The server finishes the exchange on its own; wait for it (a few hundred ms at most).
    for (let i = 0; i < 100 && (await membank.list('carol')).memories.length === before; i++) await sleep(50);
    assert.equal((await membank.list('carol')).memories.length, before + 1);
  });

  test('the timeout bounds each wait between pieces of the stream', async () => {
    // A model that takes 3 s per word, and a request that waits 1 s at most for each piece.
    const slow = await startStubLlm({ reply: () => 'Miso is fine.', delayMs: 3_000 });
    const slowServer = await startServer({ dir, env: { MEMBANK_LLM_BASE_URL: slow.baseUrl, MEMBANK_LLM_MODEL: 'stub' } });
    try {
      const client = new MembankClient({ baseUrl: slowServer.baseUrl });
      await client.remember('carol', 'My cat is Miso');
      const seen: string[] = [];
      const [, ms] = await timed(() =>
        rejects(async () => {
          for await (const event of client.chatStream('carol', 'And my cat?', { timeout: 1_000 })) seen.push(event.type);
        }, 'timeout', 0),
      );
      assert.ok(seen.includes('recalled'), `the stream had started: ${seen.join(' ')}`);
      assert.ok(ms < 2_900, `gave up after ${Math.round(ms)} ms, before the next word`);
    } finally {
      // The stub first: the server's model call then fails and its exchange ends at once.
      await slow.stop();
      await slowServer.stop();
    }
  });
});
