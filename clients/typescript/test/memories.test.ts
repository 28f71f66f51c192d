// The client against a real `membank serve` (keyless loopback mode, the real embedding
// model, a fresh database): every memory operation, the event log, export, sweep and
// maintain, and what bad input, hostile strings and unknown ids come back as.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { MembankClient, type Memory } from '../src/index.js';
import { removeDir, startServer, tempDir, type RunningServer } from '../tools/server.js';
import { collect, rejects } from './support.js';

const NIL_ID = '00000000-0000-0000-0000-000000000000';

describe('memories against a real membank serve', () => {
  let dir: string;
  let server: RunningServer;
  let membank: MembankClient;

  before(async () => {
    dir = tempDir('membank-ts-memories');
    server = await startServer({ dir });
    membank = new MembankClient({ baseUrl: server.baseUrl, timeout: 20_000 });
  });

  after(async () => {
    await server?.stop();
    if (dir) removeDir(dir);
  });

  test('remember then recall: "My cat is Miso" is what "cat\'s name" finds', async () => {
    const cat = await membank.remember('alice', 'My cat is Miso');
    assert.equal(cat.kind, 'turn');
    assert.equal(cat.user, 'alice');
    assert.equal(cat.user_text, 'My cat is Miso');
    assert.match(cat.id, /^[0-9a-f-]{36}$/);
    await membank.remember('alice', { user_text: 'I work as a nurse in Lisbon', assistant_text: 'That sounds demanding.', occurred_at: '2024-05-03T09:00:00Z' });
    await membank.remember('alice', 'My favourite colour is green');

    const recalled = await membank.recall('alice', { query: "cat's name", k: 3 });
    assert.ok(recalled.results.length > 0, 'something was recalled');
    assert.match(recalled.results[0]?.content ?? '', /Miso/);
    assert.equal(recalled.results[0]?.id, cat.id);
    assert.equal(recalled.strengthened, true);
    assert.equal(typeof recalled.query_id, 'string');

    const plain = await membank.recall('alice', "what is my cat's name?");
    assert.ok(plain.results.some((hit) => hit.content?.includes('Miso')));
  });

  test('notes: a string is an agent note; the object form takes source and a day', async () => {
    const note = await membank.note('alice', 'Alice is allergic to peanuts.');
    assert.equal(note.kind, 'note');
    assert.equal(note.source, 'agent');
    assert.equal(note.content, 'Alice is allergic to peanuts.');
    const dated = await membank.note('alice', { text: 'Moved to Porto.', source: 'user', occurred_at: '2024-05-04' });
    assert.equal(dated.source, 'user');
    assert.equal(dated.day, '2024-05-04');
    const hits = await membank.recall('alice', { query: 'food allergy', k: 2, strengthen: false });
    assert.equal(hits.strengthened, false);
    assert.ok(hits.results.some((hit) => hit.id === note.id));
  });

  test('list and get: filters, paging and one memory with its retention', async () => {
    const mem = await membank.note('dora', 'Dora keeps bees.');
    await membank.remember('dora', 'I visited Kyoto last spring');
    await membank.remember('dora', 'I play the cello');

    const all = await membank.list('dora');
    assert.equal(all.user_known, true);
    assert.equal(all.memories.length, 3);
    assert.equal(all.counts.active, 3);
    const notes = await membank.list('dora', { kind: ['note'] });
    assert.deepEqual(notes.memories.map((m) => m.id), [mem.id]);
    const page = await membank.list('dora', { limit: 1, offset: 1, order: 'oldest' });
    assert.equal(page.memories.length, 1);
    assert.match(page.memories[0]?.content ?? '', /Kyoto/);

    const got = await membank.get('dora', mem.id);
    assert.equal(got.id, mem.id);
    assert.equal(got.content, 'Dora keeps bees.');
    assert.ok(got.retention > 0 && got.retention <= 1);
    assert.equal(got.past_threshold, false);

    const nobody = await membank.list('nobody-here');
    assert.equal(nobody.user_known, false);
    assert.deepEqual(nobody.memories, []);
  });

  test('forget, restore, pin, unpin, erase; and each one in the event log', async () => {
    const mem = await membank.note('erin', 'Erin hides the spare key under the blue pot.');
    const forgotten = await membank.forget('erin', mem.id, 'asked to forget');
    assert.equal(forgotten.status, 'archived');
    await rejects(membank.forget('erin', mem.id), 'conflict', 409);
    assert.equal((await membank.list('erin')).memories.length, 0, 'an archived memory is not listed by default');
    assert.equal((await membank.list('erin', { status: ['active', 'archived'] })).memories.length, 1);

    assert.equal((await membank.restore('erin', mem.id)).status, 'active');
    await rejects(membank.restore('erin', mem.id), 'conflict', 409);
    assert.equal((await membank.pin('erin', mem.id)).pinned, true);
    assert.equal((await membank.list('erin', { pinned: true })).memories.length, 1);
    assert.equal((await membank.unpin('erin', mem.id)).pinned, false);

    const erased = await membank.erase('erin', mem.id);
    assert.equal(erased.status, 'erased');
    assert.equal(erased.content ?? null, null);
    const tombstone = await membank.get('erin', mem.id);
    assert.equal(tombstone.status, 'erased');
    assert.equal(tombstone.content ?? null, null, 'an erased memory answers as a content-free tombstone');
    const hits = await membank.recall('erin', 'spare key');
    assert.ok(!hits.results.some((hit) => hit.id === mem.id), 'recall never returns an erased memory');

    const log = await membank.events('erin', { memory: mem.id });
    assert.deepEqual(
      log.events.map((e) => e.kind),
      ['created', 'archived', 'restored', 'pinned', 'unpinned', 'erased'],
    );
    const archived = log.events[1];
    assert.equal(archived?.memory_id, mem.id);
    assert.equal(typeof archived?.data, 'object');
    // Paging: `after` the last seq of the previous page.
    const first = await membank.events('erin', { limit: 2 });
    assert.equal(first.events.length, 2);
    const rest = await membank.events('erin', { after: first.events[1]?.seq ?? 0 });
    assert.deepEqual([...first.events, ...rest.events].map((e) => e.seq), log.events.map((e) => e.seq));
  });

  test('edit keeps the old text as superseded; used strengthens what a reply used', async () => {
    const mem = await membank.note('fay', 'Fay drinks coffee.');
    const edited = await membank.edit('fay', mem.id, { text: 'Fay drinks green tea.' });
    assert.notEqual(edited.id, mem.id);
    assert.equal((await membank.get('fay', mem.id)).status, 'superseded');
    const strengthened = await membank.used('fay', [edited.id]);
    assert.deepEqual(strengthened.map((m) => m.id), [edited.id]);
    // Used the day it was written: counted as a recall; spaced strengthening adds to S only
    // on a later day.
    assert.equal(strengthened[0]?.recall_count, edited.recall_count + 1);
    assert.ok((strengthened[0]?.strength ?? 0) >= edited.strength);
  });

  test('export streams the header, the records and the end line', async () => {
    await membank.note('gus', 'Gus collects stamps.');
    await membank.remember('gus', 'I have two brothers');
    const records = await collect(membank.export('gus'));
    assert.equal(records[0]?.format, 'membank-export');
    const types = records.slice(1).map((r) => r.type);
    assert.equal(types[0], 'user');
    assert.equal(types.filter((t) => t === 'memory').length, 2);
    assert.ok(types.filter((t) => t === 'event').length >= 2);
    const end = records[records.length - 1];
    assert.equal(end?.type, 'end');
    assert.equal((end as { memories?: unknown }).memories, 2);
    const withVectors = await collect(membank.export('gus', { vectors: true }));
    assert.equal(withVectors[0]?.vectors, true);
  });

  test('sweep and maintain: dry runs report and change nothing', async () => {
    await membank.note('hal', 'Hal is learning Portuguese.');
    const sweep = await membank.sweep('hal', { dry_run: true });
    assert.equal(sweep.dry_run, true);
    assert.ok(sweep.examined >= 1);
    assert.deepEqual(sweep.archived, []);
    const cycle = await membank.maintain('hal', { dry_run: true });
    assert.equal(cycle.user, 'hal');
    assert.equal(cycle.dry_run, true);
    const real = await membank.maintain('hal');
    assert.equal(real.dry_run, false);
    assert.equal((await membank.sweep('hal')).dry_run, false);
  });

  test('an Idempotency-Key makes a retried write store once', async () => {
    const first = await membank.remember('ida', 'I was born in Ghent', { idempotencyKey: 'ts-client-retry-1' });
    const again = await membank.remember('ida', 'I was born in Ghent', { idempotencyKey: 'ts-client-retry-1' });
    assert.equal(again.id, first.id);
    assert.equal((await membank.list('ida')).memories.length, 1);
    await rejects(membank.remember('ida', 'Something else', { idempotencyKey: 'ts-client-retry-1' }), 'invalid_input', 422);
    const batch = await membank.rememberBatch('ida', ['First turn', { user_text: 'Second turn', assistant_text: 'Noted.' }]);
    assert.equal(batch.length, 2);
  });

  describe('bad input', () => {
    test('a blank user: refused before sending when empty, by the server when white space', async () => {
      const local = await rejects(membank.remember('', 'hello'), 'invalid_input', 0);
      assert.match(local.message, /user/);
      await rejects(membank.remember('   ', 'hello'), 'invalid_input', 422);
      await rejects(membank.recall('\t', 'anything'), 'invalid_input', 422);
    });

    test('"." and ".." as a user or id cannot be sent (URL parsing would resolve them away)', async () => {
      await rejects(membank.list('..'), 'invalid_input', 0);
      await rejects(membank.list('.'), 'invalid_input', 0);
      await rejects(membank.erase('alice', '..'), 'not_found', 0);
      await rejects(membank.get('alice', ''), 'not_found', 0);
    });

    test('k = 0 and k over the limit', async () => {
      const zero = await rejects(membank.recall('alice', { query: 'cat', k: 0 }), 'invalid_input', 422);
      assert.match(zero.message, /\bk\b/);
      await rejects(membank.recall('alice', { query: 'cat', k: 100_000 }), 'invalid_input', 422);
      await rejects(membank.chat('alice', { message: 'hi', k: 0 }), 'invalid_input', 422);
    });

    test('blank and oversized text; a body over the server limit', async () => {
      await rejects(membank.note('alice', '   '), 'invalid_input', 422);
      await rejects(membank.recall('alice', ''), 'invalid_input', 422);
      const tooLong = await rejects(membank.note('alice', 'x'.repeat(40_000)), 'invalid_input', 422);
      assert.match(tooLong.message, /limit/);
      await rejects(membank.remember('alice', 'y'.repeat(2 * 1024 * 1024)), 'payload_too_large', 413);
    });

    test('bad times, an unknown reminisce mode, an importance out of range', async () => {
      await rejects(membank.remember('alice', { user_text: 'hello', occurred_at: 'last tuesday' }), 'invalid_input', 422);
      await rejects(membank.recall('alice', { query: 'cat', reminisce: 'sometimes' }), 'invalid_input', 422);
      await rejects(membank.note('alice', { text: 'important', importance: 7 }), 'invalid_input', 422);
      await rejects(membank.list('alice', { from: '2024-02-30' }), 'invalid_input', 422);
      await rejects(membank.list('alice', { limit: 0 }), 'invalid_input', 422);
      await rejects(membank.list('alice', { limit: 1.5 }), 'bad_request', 400);
    });

    test('unknown ids, ids that are no ids, another user\'s id: 404 not_found', async () => {
      await rejects(membank.get('alice', NIL_ID), 'not_found', 404);
      await rejects(membank.get('alice', 'not-an-id'), 'not_found', 404);
      await rejects(membank.forget('alice', NIL_ID), 'not_found', 404);
      await rejects(membank.restore('alice', NIL_ID), 'not_found', 404);
      await rejects(membank.pin('alice', 'a/b?c#d'), 'not_found', 404);
      await rejects(membank.erase('alice', NIL_ID), 'not_found', 404);
      const alices = await membank.note('alice', 'Only Alice may see this.');
      await rejects(membank.get('bob', alices.id), 'not_found', 404);
      await rejects(membank.erase('bob', alices.id), 'not_found', 404);
      assert.equal((await membank.get('alice', alices.id)).status, 'active');
    });

    test('hostile strings: control characters and bidi overrides come back exactly; NUL is refused', async () => {
      const hostile = 'ok \u001b[2J\u001b]0;pwned\u0007 \u202Etxt.exe\u202C \u2066isolate\u2069 zero\u200Bwidth \r\n tab\t end \uFFFD 🐈 "quotes" <b>&amp;</b>';
      const stored = await membank.note('ivy', hostile);
      assert.equal(stored.content, hostile);
      assert.equal((await membank.get('ivy', stored.id)).content, hostile);
      const hit = (await membank.recall('ivy', { query: 'txt.exe isolate', k: 1 })).results[0];
      assert.equal(hit?.content, hostile);
      await rejects(membank.note('ivy', 'before\u0000after'), 'invalid_input', 422);

      // User ids: control characters are refused; bidi overrides, URL syntax and
      // non-Latin text are ordinary characters, each its own user.
      await rejects(membank.note('ivy\nadmin', 'x'), 'invalid_input', 422);
      await rejects(membank.note('iv\u0085y', 'x'), 'invalid_input', 422);
      // A user id is trimmed first (U+0085 is white space as well as a control character).
      assert.equal((await membank.note('ivy\u0085', 'trimmed to ivy')).user, 'ivy');
      for (const user of ['\u202Eivy', 'ivy?x=1&y=2#top', 'ivy%2F..%2Fbob', 'ivy name', '伊薇', 'ivy+plus']) {
        const mem = await membank.note(user, `a note for ${JSON.stringify(user)}`);
        assert.equal(mem.user, user);
        const listed = await membank.list(user);
        assert.deepEqual(listed.memories.map((m) => m.id), [mem.id], `only ${JSON.stringify(user)}'s memory is listed for them`);
      }
      assert.equal((await membank.list('ivy')).memories.length, 2, 'ivy sees only her own memories');
    });
  });

  test('about and health describe the server', async () => {
    const health = await membank.health();
    assert.equal(health.status, 'ok');
    assert.equal(health.auth, 'loopback');
    const about = await membank.about();
    assert.equal(typeof about.embedding_model, 'string');
    const users = await membank.users();
    assert.ok(users.some((u) => u.user === 'alice'));
  });

  test('the typed answers are what the server sends (a Memory round-trips through JSON unchanged)', async () => {
    const mem: Memory = await membank.note('jo', 'Jo sails on Sundays.');
    const again = await membank.get('jo', mem.id);
    for (const key of ['id', 'kind', 'source', 'content', 'day', 'occurred_at', 'user'] as const) {
      assert.equal(again[key], mem[key], key);
    }
  });
});
