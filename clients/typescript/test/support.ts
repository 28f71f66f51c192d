// What the test files share: assertions about MembankErrors, and reading a whole stream.

import assert from 'node:assert/strict';
import { MembankError } from '../src/index.js';

/** Awaits `action`, asserts it throws a MembankError with `code` (and `status`), returns it. */
export async function rejects(action: Promise<unknown> | (() => Promise<unknown>), code: string, status?: number): Promise<MembankError> {
  try {
    await (typeof action === 'function' ? action() : action);
  } catch (err) {
    assert.ok(err instanceof MembankError, `expected a MembankError, got ${err instanceof Error ? `${err.name}: ${err.message}` : String(err)}`);
    assert.equal(err.code, code, `expected code ${code}, got ${err.code} (${err.status}): ${err.message}`);
    if (status !== undefined) assert.equal(err.status, status, `expected status ${status}, got ${err.status}: ${err.message}`);
    assert.ok(err.message.length > 0, 'the error has a message');
    return err;
  }
  assert.fail(`expected a MembankError ${code}, but the call succeeded`);
}

/** Every item of an async iterable. */
export async function collect<T>(source: AsyncIterable<T>): Promise<T[]> {
  const items: T[] = [];
  for await (const item of source) items.push(item);
  return items;
}

/** Milliseconds `action` took. */
export async function timed<T>(action: () => Promise<T>): Promise<[T, number]> {
  const start = performance.now();
  const value = await action();
  return [value, performance.now() - start];
}
