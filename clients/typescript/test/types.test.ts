// Compile-time checks: the client's signatures are the generated document's types, so a
// misspelt field, a wrong type or an unknown event is an error for the caller's compiler.
// Each `@ts-expect-error` fails the test build (`tsc -p tsconfig.test.json`) if the line
// below it ever compiles. Nothing here is sent anywhere.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MembankClient, type ChatEvent, type components, type Memory, type RecallResult } from '../src/index.js';

test('the types hold the REST contract', () => {
  const membank = new MembankClient({ baseUrl: 'http://127.0.0.1:9' });
  // Calls are built but never awaited or sent: only their types matter here.
  const calls = (): unknown[] => [
    // @ts-expect-error: RecallIn has no `kk`
    membank.recall('alice', { query: 'cat', kk: 3 }),
    // @ts-expect-error: k is a number
    membank.recall('alice', { query: 'cat', k: '3' }),
    // @ts-expect-error: a turn needs user_text
    membank.remember('alice', { assistant_text: 'hi' }),
    // @ts-expect-error: kinds are the document's enum
    membank.recall('alice', { query: 'cat', kinds: ['diary'] }),
    // @ts-expect-error: list's filters are the document's query parameters
    membank.list('alice', { colour: 'red' }),
    // @ts-expect-error: the user comes first and is a string
    membank.get(42, 'id'),
  ];
  assert.equal(typeof calls, 'function');

  const memory = {} as Memory;
  const recallCount: number = memory.recall_count;
  const content: string | null | undefined = memory.content;
  const result = { results: [] } as unknown as RecallResult;
  const score: number | undefined = result.results[0]?.score;
  // The named types are the generated ones.
  const same: components['schemas']['MemoryOut'] = memory;
  void [recallCount, content, score, same];

  const describe = (event: ChatEvent): string => {
    switch (event.type) {
      case 'recalled':
        return event.memories.map((m) => m.label).join(',');
      case 'delta':
        return event.text;
      case 'done':
        return event.result.reply;
      default: {
        const never: never = event;
        return never;
      }
    }
  };
  assert.equal(describe({ type: 'delta', text: 'hi' }), 'hi');
});
