// The client against a keyed `membank serve` (API keys in the database, no LLM): a missing,
// unknown or misused key is a MembankError with the server's code and status, a good key
// works, and a server without an LLM refuses chat before any stream starts.

import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { MembankClient } from '../src/index.js';
import { createKey, removeDir, startServer, tempDir, type RunningServer } from '../tools/server.js';
import { collect, rejects } from './support.js';

describe('a keyed membank serve', () => {
  let dir: string;
  let server: RunningServer;
  let tenantKey: string;
  let aliceKey: string;

  before(async () => {
    dir = tempDir('membank-ts-auth');
    const db = join(dir, 'membank.db');
    tenantKey = createKey(db, 'acme');
    aliceKey = createKey(db, 'acme', 'alice');
    server = await startServer({ dir, db, tenant: 'acme' });
  });

  after(async () => {
    await server?.stop();
    if (dir) removeDir(dir);
  });

  test('no key: 401 unauthorized, as a MembankError', async () => {
    const anonymous = new MembankClient({ baseUrl: server.baseUrl });
    const err = await rejects(anonymous.recall('alice', 'cat'), 'unauthorized', 401);
    assert.match(err.message, /API key|Bearer/);
    await rejects(anonymous.remember('alice', 'My cat is Miso'), 'unauthorized', 401);
    await rejects(collect(anonymous.chatStream('alice', 'hi')), 'unauthorized', 401);
    await rejects(collect(anonymous.export('alice')), 'unauthorized', 401);
    // The system endpoints need none.
    assert.equal((await anonymous.health()).auth, 'keys');
  });

  test('an unknown key: 401; a key bound to alice acting for bob: 403', async () => {
    const stranger = new MembankClient({ baseUrl: server.baseUrl, apiKey: 'mbk_0000000000_notarealsecret' });
    await rejects(stranger.list('alice'), 'unauthorized', 401);
    const asAlice = new MembankClient({ baseUrl: server.baseUrl, apiKey: aliceKey });
    await rejects(asAlice.note('bob', 'not mine to write'), 'forbidden', 403);
    await rejects(asAlice.list('bob'), 'forbidden', 403);
  });

  test('a good key: the round trip works, and each key sees what its scope allows', async () => {
    const asTenant = new MembankClient({ baseUrl: server.baseUrl, apiKey: tenantKey });
    const asAlice = new MembankClient({ baseUrl: server.baseUrl, apiKey: aliceKey });
    const cat = await asAlice.remember('alice', 'My cat is Miso');
    const hits = await asTenant.recall('alice', "cat's name");
    assert.equal(hits.results[0]?.id, cat.id);
    const bobs = await asTenant.note('bob', 'Bob keeps a diary.');
    await rejects(asAlice.get('bob', bobs.id), 'forbidden', 403);
    const about = await asAlice.about();
    assert.equal(about.auth, 'keys');
  });

  test('without an LLM, chat is 503 unavailable before any stream starts', async () => {
    const asAlice = new MembankClient({ baseUrl: server.baseUrl, apiKey: aliceKey });
    const events: unknown[] = [];
    const err = await rejects(async () => {
      for await (const event of asAlice.chatStream('alice', 'What is my cat called?')) events.push(event);
    }, 'unavailable', 503);
    assert.match(err.message, /MEMBANK_LLM_BASE_URL/);
    assert.deepEqual(events, []);
    await rejects(asAlice.chat('alice', 'hello'), 'unavailable', 503);
  });
});
