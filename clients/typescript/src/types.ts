/**
 * Names for the generated wire types ({@link ./schema.d.ts}, from the server's OpenAPI
 * document). Bodies keep the REST API's field names (`user_text`, `occurred_at`), so the
 * README's REST table and this client say the same thing. A type that no longer exists in
 * the served document fails the build here, not in a caller's code.
 *
 * @module
 */

import type { components, operations } from './schema.js';

type Schemas = components['schemas'];

/** A stored memory (turn, note, summary, portrait or fused memory). */
export type Memory = Schemas['MemoryOut'];
/** A memory with its retention now, as `get` and `list` return it. */
export type MemoryWithRetention = Schemas['MemoryWithRetention'];
/** What `remember` sends: a conversation turn. */
export type TurnInput = Schemas['TurnIn'];
/** What `note` sends. */
export type NoteInput = Schemas['NoteIn'];
/** What `edit` sends: `{text}` for a note, `{user_text, assistant_text}` for a turn. */
export type EditInput = Schemas['EditIn'];
/** What `recall` sends. */
export type RecallInput = Schemas['RecallIn'];
/** A recall's answer. */
export type RecallResult = Schemas['RecallOut'];
/** One recalled memory with its scores. */
export type RecallHit = Schemas['RecallHitOut'];
/** A page of `list`. */
export type MemoryList = Schemas['ListOut'];
/** `list`'s filters (`status` and `kind` also take arrays here; they are sent comma-separated). */
export type ListQuery = Omit<NonNullable<operations['list']['parameters']['query']>, 'status' | 'kind'> & {
  status?: string | readonly string[];
  kind?: string | readonly string[];
};
/** One entry of the event log. */
export type MemoryEvent = Schemas['EventOut'];
/** A page of the event log. */
export type EventPage = Schemas['EventsOut'];
/** `events`' filters: one memory, after a log position, page size. */
export type EventsQuery = NonNullable<operations['events']['parameters']['query']>;
/** What `sweep` sends. */
export type SweepInput = Schemas['SweepIn'];
/** A sweep's report. */
export type SweepResult = Schemas['SweepOut'];
/** What `maintain` sends. */
export type MaintainInput = Schemas['MaintainIn'];
/** A maintenance cycle's report. */
export type MaintainResult = Schemas['MaintainOut'];
/** What `used` sends. */
export type UsedInput = Schemas['UsedIn'];
/** What `chat` and `chatStream` send. */
export type ChatInput = Schemas['ChatIn'];
/** A chat's whole answer (also the `done` event of a stream). */
export type ChatResult = Schemas['ChatOut'];
/** A memory put into the chat prompt, with its label (`M1`, …). */
export type CitedMemory = Schemas['CitedOut'];
/** The caller, the auth mode, the LLM and the policies (`about`). */
export type About = Schemas['AboutOut'];
/** `/healthz`. */
export type Health = Schemas['HealthOut'];
/** A user of the caller's tenant. */
export type UserInfo = Schemas['UserOut'];

/**
 * One event of a streamed chat, in order: `recalled` once (the memories in the prompt), then
 * `delta` many times (the reply as it is written), then `done` once (exactly what `chat`
 * returns; the exchange is stored). A failure midway is thrown as a `MembankError`, not
 * yielded.
 */
export type ChatEvent =
  | { type: 'recalled'; memories: CitedMemory[] }
  | { type: 'delta'; text: string }
  | { type: 'done'; result: ChatResult };

/**
 * One line of a membank export (`membank import membank-export FILE` reads them back): the
 * header first (`format: "membank-export"`), then `user`, `memory` and `event` records, then
 * `end` with the counts. Records are not in the OpenAPI document (the export is a stream),
 * so they are typed loosely.
 */
export type ExportRecord =
  | { format: 'membank-export'; version: number; vectors: boolean; type?: undefined }
  | { type: 'user' | 'memory' | 'event' | 'end' | (string & {}); [field: string]: unknown };
