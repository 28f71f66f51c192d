/**
 * {@link MembankClient}: membank's REST API as methods, one per operation, typed by the
 * generated `schema.d.ts`. Each method names the route it calls as a key of the generated
 * `paths`, so a route or body that changes in the served document fails this file's build.
 *
 * What it does beyond `fetch`: the bearer key, path segments encoded (and `.`/`..`, which
 * URL parsing would resolve away, refused), a timeout on every request (and between the
 * pieces of a stream), every failure turned into one {@link MembankError}, and the chat
 * stream and the export read as async iterators. What it does not do: retry (a retry of a
 * write is safe only with an `idempotencyKey`, which the caller chooses), or keep any state
 * between requests.
 *
 * @module
 */

import { MembankError } from './errors.js';
import type { paths } from './schema.js';
import { lines, serverSentEvents } from './stream.js';
import type {
  About,
  ChatEvent,
  ChatInput,
  ChatResult,
  CitedMemory,
  EditInput,
  EventPage,
  EventsQuery,
  ExportRecord,
  Health,
  ListQuery,
  MaintainInput,
  MaintainResult,
  Memory,
  MemoryList,
  MemoryWithRetention,
  NoteInput,
  RecallInput,
  RecallResult,
  SweepInput,
  SweepResult,
  TurnInput,
  UserInfo,
} from './types.js';

/** How to reach a membank server. */
export interface MembankClientOptions {
  /** The server, e.g. `http://127.0.0.1:8787` (a path prefix behind a proxy is kept). */
  baseUrl: string;
  /** An API key (`mbk_…`), sent as `Authorization: Bearer KEY`; omit for a keyless loopback server. */
  apiKey?: string | undefined;
  /**
   * Milliseconds to wait for an answer (default 30 000; 0 waits forever). For a JSON answer
   * it bounds the whole request; for a stream (`chatStream`, `export`) it bounds the wait for
   * the answer to start and then each wait for its next piece (the server sends a keep-alive
   * every 15 s while a model thinks).
   */
  timeout?: number | undefined;
  /** `X-Membank-Tenant`: the tenant an admin key acts for. */
  tenant?: string | undefined;
  /** Another `fetch` (a test double, or one with a proxy agent); default the global one. */
  fetch?: typeof fetch | undefined;
  /** Extra headers sent with every request. */
  headers?: Record<string, string> | undefined;
}

/** Per-request options. */
export interface RequestOptions {
  /** Cancels the request (then the error's code is `aborted`). */
  signal?: AbortSignal | undefined;
  /** Overrides the client's `timeout` for this request. */
  timeout?: number | undefined;
  /**
   * `Idempotency-Key` (1–255 visible ASCII characters) on the writes that take one
   * (`remember`, `rememberBatch`, `note`, `chat`): the same key and body within 24 hours
   * returns the first answer and stores nothing again, so such a write can be retried.
   */
  idempotencyKey?: string | undefined;
}

/** `export`'s options. */
export interface ExportOptions extends RequestOptions {
  /** Include each memory's vector and the model that made it. */
  vectors?: boolean | undefined;
}

const DEFAULT_TIMEOUT_MS = 30_000;

// --- Types that tie each call to the generated document -------------------------------

type Method = 'get' | 'post' | 'patch' | 'delete';
/** The methods a path has in the document (absent ones are `?: never` there). */
type MethodsOf<P extends keyof paths> = { [M in Method]: [NonNullable<paths[P][M]>] extends [never] ? never : M }[Method];
type Operation<P extends keyof paths, M extends Method> = NonNullable<paths[P][M]>;
type Success<O> = O extends { responses: infer R }
  ? R extends { 200: { content: { 'application/json': infer B } } }
    ? B
    : R extends { 201: { content: { 'application/json': infer B } } }
      ? B
      : never
  : never;
type RequestBody<O> = O extends { requestBody?: infer RB } ? (NonNullable<RB> extends { content: { 'application/json': infer B } } ? B : never) : never;
type Query<O> = O extends { parameters: { query?: infer Q } } ? Q : never;
type PathParams<P extends string> = P extends `${string}{${infer Name}}${infer Rest}` ? { [K in Name | keyof PathParams<Rest>]: string } : {};

type QueryValue = string | number | boolean | readonly string[] | null | undefined;

interface CallInit {
  query?: Record<string, QueryValue> | undefined;
  body?: unknown;
  options?: RequestOptions | undefined;
  accept?: string;
}

/**
 * A timer that aborts a request when it fires, restartable between the pieces of a stream,
 * and linked to the caller's signal.
 */
class Deadline {
  readonly controller = new AbortController();
  timedOut = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private readonly onAbort = (): void => this.controller.abort(this.external?.reason);

  constructor(
    readonly ms: number,
    private readonly external: AbortSignal | undefined,
  ) {
    if (external?.aborted) this.controller.abort(external.reason);
    else external?.addEventListener('abort', this.onAbort, { once: true });
    this.restart();
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /** Starts the wait again (a piece of the stream arrived). */
  restart(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    if (this.ms > 0 && Number.isFinite(this.ms)) {
      this.timer = setTimeout(() => {
        this.timedOut = true;
        this.controller.abort(new Error(`timed out after ${this.ms} ms`));
      }, this.ms);
    }
  }

  /** Done: no timer, no listener. */
  clear(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    this.external?.removeEventListener('abort', this.onAbort);
  }

  /** Stops an answer still being read (a consumer left a stream early). */
  cancel(): void {
    this.clear();
    this.controller.abort(new Error('the caller stopped reading'));
  }
}

/** An answer whose status was 2xx, with the deadline still running for its body. */
interface Opened {
  response: Response;
  deadline: Deadline;
  label: string;
}

const networkCodes: Record<string, string> = {
  ECONNREFUSED: 'connection refused',
  ECONNRESET: 'connection reset',
  ENOTFOUND: 'host not found',
  EAI_AGAIN: 'host name lookup failed',
  EHOSTUNREACH: 'host unreachable',
  ENETUNREACH: 'network unreachable',
  ETIMEDOUT: 'connection timed out',
  EPIPE: 'connection closed',
  UND_ERR_SOCKET: 'connection closed',
};

/** The system error code inside a fetch failure (Node's undici nests it in `cause`). */
function causeCode(err: unknown): string | undefined {
  for (let e: unknown = err, depth = 0; e && typeof e === 'object' && depth < 4; depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'ERR_INVALID_ARG_TYPE') return code;
    const nested = (e as { errors?: unknown[] }).errors;
    if (Array.isArray(nested) && nested.length > 0) {
      const inner = causeCode(nested[0]);
      if (inner) return inner;
    }
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

function describe(err: unknown): string {
  const code = causeCode(err);
  if (code) return networkCodes[code] ? `${networkCodes[code]} (${code})` : code;
  if (err instanceof Error) {
    const cause = err.cause instanceof Error ? `: ${err.cause.message}` : '';
    return `${err.message}${cause}`;
  }
  return String(err);
}

function isErrorBody(value: unknown): value is { error: { code: string; message: string } } {
  if (!value || typeof value !== 'object') return false;
  const error = (value as { error?: unknown }).error;
  return !!error && typeof error === 'object' && typeof (error as { code?: unknown }).code === 'string' && typeof (error as { message?: unknown }).message === 'string';
}

function snippet(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat;
}

/** A user id or memory id as one path segment. */
function segment(kind: 'user' | 'id', value: string): string {
  if (typeof value !== 'string' || value === '' || value === '.' || value === '..') {
    // `.` and `..` would be resolved away by URL parsing (`/v1/users/../turns` is
    // `/v1/turns`), even percent-encoded, so they cannot be sent at all.
    const what = kind === 'user' ? 'user' : 'memory id';
    const rule = value === '' || typeof value !== 'string' ? 'must not be empty' : `must not be "${value}"`;
    throw new MembankError(kind === 'user' ? 'invalid_input' : 'not_found', `${what}: ${rule}`);
  }
  return encodeURIComponent(value);
}

/**
 * A client of one membank server. Every method acts for one `user` of the key's tenant,
 * returns the REST answer typed from the OpenAPI document, and throws {@link MembankError}.
 *
 * ```ts
 * const membank = new MembankClient({ baseUrl: 'http://127.0.0.1:8787', apiKey: process.env.MEMBANK_KEY });
 * await membank.remember('alice', 'I adopted a grey cat named Miso');
 * const { results } = await membank.recall('alice', "what is my cat's name?");
 * ```
 */
export class MembankClient {
  readonly baseUrl: string;
  readonly timeout: number;
  private readonly apiKey: string | undefined;
  private readonly tenant: string | undefined;
  private readonly fetchImpl: typeof fetch;
  private readonly extraHeaders: Record<string, string>;

  constructor(options: MembankClientOptions) {
    let url: URL;
    try {
      url = new URL(options.baseUrl);
    } catch {
      throw new TypeError(`baseUrl: not a URL: ${JSON.stringify(options.baseUrl)}`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TypeError(`baseUrl: must be http or https, not ${url.protocol}`);
    if (url.search || url.hash) throw new TypeError('baseUrl: must not have a query or fragment');
    this.baseUrl = url.toString().replace(/\/+$/, '');
    const timeout = options.timeout ?? DEFAULT_TIMEOUT_MS;
    if (!(timeout >= 0)) throw new TypeError(`timeout: must be milliseconds ≥ 0 (0 = none), not ${timeout}`);
    this.timeout = timeout;
    if (options.apiKey !== undefined && !/^[!-~]+$/.test(options.apiKey)) throw new TypeError('apiKey: must be visible ASCII (a key printed by `membank keys create`)');
    this.apiKey = options.apiKey;
    this.tenant = options.tenant;
    // Header values fetch would refuse at every request (a newline, say) are refused here,
    // once, rather than reported later as a failure to reach the server.
    try {
      new Headers({ ...options.headers, ...(options.tenant === undefined ? {} : { 'X-Membank-Tenant': options.tenant }) });
    } catch (err) {
      throw new TypeError(`headers or tenant: not valid as an HTTP header: ${err instanceof Error ? err.message : String(err)}`);
    }
    const fetchImpl = options.fetch ?? globalThis.fetch;
    if (typeof fetchImpl !== 'function') throw new TypeError('no fetch: use Node 18+ or pass options.fetch');
    this.fetchImpl = fetchImpl;
    this.extraHeaders = { ...options.headers };
  }

  // --- Memories ------------------------------------------------------------------------

  /** Stores a conversation turn (`POST /v1/users/{user}/turns`); a string is the user's text. */
  remember(user: string, turn: TurnInput | string, options?: RequestOptions): Promise<Memory> {
    const body: TurnInput = typeof turn === 'string' ? { user_text: turn } : turn;
    return this.json('post', '/v1/users/{user}/turns', { user }, { body, options });
  }

  /** Stores turns in order, all or none (`POST /v1/users/{user}/turns/batch`). */
  async rememberBatch(user: string, turns: ReadonlyArray<TurnInput | string>, options?: RequestOptions): Promise<Memory[]> {
    const body = { turns: turns.map((t): TurnInput => (typeof t === 'string' ? { user_text: t } : t)) };
    const out = await this.json('post', '/v1/users/{user}/turns/batch', { user }, { body, options });
    return out.memories;
  }

  /** Stores a note (`POST /v1/users/{user}/notes`); a string is its text (source `agent`). */
  note(user: string, note: NoteInput | string, options?: RequestOptions): Promise<Memory> {
    const body: NoteInput = typeof note === 'string' ? { text: note } : note;
    return this.json('post', '/v1/users/{user}/notes', { user }, { body, options });
  }

  /** The memories relevant to a query (`POST /v1/users/{user}/recall`); a string is the query. */
  recall(user: string, query: RecallInput | string, options?: RequestOptions): Promise<RecallResult> {
    const body: RecallInput = typeof query === 'string' ? { query } : query;
    return this.json('post', '/v1/users/{user}/recall', { user }, { body, options });
  }

  /** One memory with its retention now; an erased one is a content-free tombstone. */
  get(user: string, id: string, options?: RequestOptions): Promise<MemoryWithRetention> {
    return this.json('get', '/v1/users/{user}/memories/{id}', { user, id }, { options });
  }

  /** A page of memories (`GET /v1/users/{user}/memories`): active ones, newest first, by default. */
  list(user: string, query: ListQuery = {}, options?: RequestOptions): Promise<MemoryList> {
    const { status, kind, ...rest } = query;
    const joined = (value: string | readonly string[] | undefined): string | undefined => (typeof value === 'string' || value === undefined ? value : value.join(','));
    const filters = { ...rest, ...(status === undefined ? {} : { status: joined(status) as string }), ...(kind === undefined ? {} : { kind: joined(kind) as string }) };
    return this.json('get', '/v1/users/{user}/memories', { user }, { query: filters, options });
  }

  /** Edits a memory: the new text becomes a new memory and the old one is kept, superseded. */
  edit(user: string, id: string, input: EditInput, options?: RequestOptions): Promise<Memory> {
    return this.json('patch', '/v1/users/{user}/memories/{id}', { user, id }, { body: input, options });
  }

  /** Archives a memory (restorable), with an optional reason kept in the event log. */
  forget(user: string, id: string, reason?: string, options?: RequestOptions): Promise<Memory> {
    return this.json('post', '/v1/users/{user}/memories/{id}/forget', { user, id }, { query: reason === undefined ? {} : { reason }, options });
  }

  /** Brings an archived or superseded memory back. */
  restore(user: string, id: string, options?: RequestOptions): Promise<Memory> {
    return this.json('post', '/v1/users/{user}/memories/{id}/restore', { user, id }, { options });
  }

  /** Pins a memory: it never decays. */
  pin(user: string, id: string, options?: RequestOptions): Promise<Memory> {
    return this.json('post', '/v1/users/{user}/memories/{id}/pin', { user, id }, { options });
  }

  /** Unpins a memory. */
  unpin(user: string, id: string, options?: RequestOptions): Promise<Memory> {
    return this.json('post', '/v1/users/{user}/memories/{id}/unpin', { user, id }, { options });
  }

  /**
   * Erases a memory for good (`DELETE …/memories/{id}`): its text, vector and index entry,
   * and those of everything made from it. Cannot be undone; returns the tombstone.
   */
  erase(user: string, id: string, options?: RequestOptions): Promise<Memory> {
    return this.json('delete', '/v1/users/{user}/memories/{id}', { user, id }, { options });
  }

  /** Strengthens the memories a reply used (`recall_mode = "used"`). */
  async used(user: string, ids: readonly string[], queryId?: string, options?: RequestOptions): Promise<Memory[]> {
    const out = await this.json('post', '/v1/users/{user}/memories/used', { user }, { body: { ids: [...ids], query_id: queryId ?? null }, options });
    return out.memories;
  }

  // --- The log, export and forgetting ---------------------------------------------------

  /** A page of the user's event log (`after` the last `seq` of the previous page for the next). */
  events(user: string, query: EventsQuery = {}, options?: RequestOptions): Promise<EventPage> {
    return this.json('get', '/v1/users/{user}/events', { user }, { query: { ...query }, options });
  }

  /**
   * The user's membank export, line by line as the server streams it: the header, `user`,
   * `memory` (erased ones as tombstones) and `event` records, then `end`. Throws
   * `interrupted` if the stream stops before `end`. Write each record as one JSON line to
   * get a file `membank import membank-export FILE` reads (numbers may print differently).
   */
  async *export(user: string, options: ExportOptions = {}): AsyncGenerator<ExportRecord, void, undefined> {
    this.checkRoute('get', '/v1/users/{user}/export');
    const path = this.fill('/v1/users/{user}/export', { user });
    const { response, deadline, label } = await this.open('GET', path, { query: { vectors: options.vectors }, options, accept: 'application/x-ndjson' });
    let ended = false;
    try {
      for await (const line of this.guard(lines(response.body ?? emptyBody(), () => deadline.restart()), deadline, label)) {
        if (line.trim() === '') continue;
        let record: ExportRecord;
        try {
          record = JSON.parse(line) as ExportRecord;
        } catch {
          throw new MembankError('invalid_response', `${label}: an export line is not JSON: ${snippet(line)}`, { status: response.status, request: label });
        }
        yield record;
        if (record.type === 'end') {
          ended = true;
          return;
        }
      }
    } finally {
      deadline.cancel();
    }
    if (!ended) throw new MembankError('interrupted', `${label}: the export stopped before its end record`, { status: response.status, request: label });
  }

  /** Runs the forgetting curve over the user now (`dry_run` only reports). */
  sweep(user: string, input: SweepInput = {}, options?: RequestOptions): Promise<SweepResult> {
    return this.json('post', '/v1/users/{user}/sweep', { user }, { body: input, options });
  }

  /** One maintenance cycle for the user (409 `conflict` while another one runs). */
  maintain(user: string, input: MaintainInput = {}, options?: RequestOptions): Promise<MaintainResult> {
    return this.json('post', '/v1/users/{user}/maintain', { user }, { body: input, options });
  }

  // --- The companion --------------------------------------------------------------------

  /** A message to the companion and its whole reply (needs an LLM on the server, else 503 `unavailable`). */
  chat(user: string, input: ChatInput | string, options?: RequestOptions): Promise<ChatResult> {
    const body: ChatInput = typeof input === 'string' ? { message: input } : input;
    return this.json('post', '/v1/users/{user}/chat', { user }, { body, options });
  }

  /**
   * A message to the companion, its reply streamed (`POST …/chat/stream`, server-sent
   * events) as {@link ChatEvent}s: `recalled`, then `delta`s, then `done`. Bad input and a
   * missing LLM throw before the first event; a failure midway throws a MembankError with
   * the server's code (nothing was stored); a stream cut before `done` throws `interrupted`.
   * Leaving the loop early stops reading, but the server still stores the exchange.
   *
   * ```ts
   * for await (const event of membank.chatStream('alice', 'What is my cat called?')) {
   *   if (event.type === 'delta') process.stdout.write(event.text);
   * }
   * ```
   */
  async *chatStream(user: string, input: ChatInput | string, options: RequestOptions = {}): AsyncGenerator<ChatEvent, void, undefined> {
    this.checkRoute('post', '/v1/users/{user}/chat/stream');
    const body: ChatInput = typeof input === 'string' ? { message: input } : input;
    const path = this.fill('/v1/users/{user}/chat/stream', { user });
    const { response, deadline, label } = await this.open('POST', path, { body, options: { ...options, idempotencyKey: undefined }, accept: 'text/event-stream' });
    const fail = (code: string, message: string): MembankError => new MembankError(code, `${label}: ${message}`, { status: response.status, request: label });
    const parse = (data: string, event: string): unknown => {
      try {
        return JSON.parse(data);
      } catch {
        throw fail('invalid_response', `the ${event} event is not JSON: ${snippet(data)}`);
      }
    };
    try {
      const source = this.guard(lines(response.body ?? emptyBody(), () => deadline.restart()), deadline, label);
      for await (const { event, data } of serverSentEvents(source)) {
        if (event === 'recalled') {
          const { memories } = parse(data, event) as { memories: CitedMemory[] };
          yield { type: 'recalled', memories };
        } else if (event === 'delta') {
          const { text } = parse(data, event) as { text: string };
          yield { type: 'delta', text };
        } else if (event === 'done') {
          yield { type: 'done', result: parse(data, event) as ChatResult };
          return;
        } else if (event === 'error') {
          const body = parse(data, event);
          if (!isErrorBody(body)) throw fail('invalid_response', `an error event of unknown shape: ${snippet(data)}`);
          throw new MembankError(body.error.code, body.error.message, { status: response.status, request: label });
        }
        // Other event names are for newer clients; skipping them keeps this one working.
      }
      throw fail('interrupted', 'the chat stream ended before its done event; the exchange may or may not have been stored');
    } finally {
      deadline.cancel();
    }
  }

  // --- The server and the tenant --------------------------------------------------------

  /** `/healthz`: alive, and whether requests need a key (`auth: "keys"` or `"loopback"`). */
  health(options?: RequestOptions): Promise<Health> {
    return this.json('get', '/healthz', {}, { options });
  }

  /** The caller (tenant, bound user, role), the auth mode, the LLM and the policies. */
  about(options?: RequestOptions): Promise<About> {
    return this.json('get', '/v1/about', {}, { options });
  }

  /** The tenant's users. */
  async users(options?: RequestOptions): Promise<UserInfo[]> {
    const out = await this.json('get', '/v1/users', {}, { options });
    return out.users;
  }

  // --- The transport --------------------------------------------------------------------

  /** A JSON call of the route `template` as the generated document types it. */
  private async json<P extends keyof paths, M extends MethodsOf<P>>(
    method: M,
    template: P,
    params: PathParams<P & string>,
    init: { query?: Query<Operation<P, M>> | undefined; body?: RequestBody<Operation<P, M>> | undefined; options?: RequestOptions | undefined },
  ): Promise<Success<Operation<P, M>>> {
    const path = this.fill(template, params as Record<string, string>);
    const { response, deadline, label } = await this.open(method.toUpperCase(), path, {
      query: init.query as Record<string, QueryValue> | undefined,
      body: init.body,
      options: init.options,
    });
    let text: string;
    try {
      text = await response.text();
    } catch (err) {
      throw this.failure(err, deadline, label, 'reading');
    } finally {
      deadline.clear();
    }
    try {
      return JSON.parse(text) as Success<Operation<P, M>>;
    } catch {
      throw new MembankError('invalid_response', `${label}: the answer is not JSON: ${snippet(text)}`, { status: response.status, request: label });
    }
  }

  /** For the streaming routes, which `json` does not type: the route must exist in the document. */
  private checkRoute<P extends keyof paths>(_method: MethodsOf<P>, _template: P): void {}

  private fill(template: string, params: Record<string, string>): string {
    return template.replace(/\{(\w+)\}/g, (_, name: string) => segment(name === 'user' ? 'user' : 'id', params[name] as string));
  }

  /**
   * Sends a request and waits for its answer to start. A 2xx answer is returned with its
   * deadline still running (the caller reads the body and clears it); any other status is
   * read and thrown as a MembankError.
   */
  private async open(method: string, path: string, init: CallInit): Promise<Opened> {
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(init.query ?? {})) {
      if (value === undefined || value === null) continue;
      url.searchParams.set(name, Array.isArray(value) ? value.join(',') : String(value));
    }
    const label = `${method} ${url.pathname}${url.search}`;
    const headers: Record<string, string> = { Accept: init.accept ?? 'application/json', ...this.extraHeaders };
    if (this.apiKey !== undefined) headers['Authorization'] = `Bearer ${this.apiKey}`;
    if (this.tenant !== undefined) headers['X-Membank-Tenant'] = this.tenant;
    const idempotencyKey = init.options?.idempotencyKey;
    if (idempotencyKey !== undefined) {
      if (!/^[!-~]{1,255}$/.test(idempotencyKey)) {
        throw new MembankError('invalid_input', 'idempotencyKey: must be 1 to 255 visible ASCII characters', { request: `${method} ${path}` });
      }
      headers['Idempotency-Key'] = idempotencyKey;
    }
    let body: string | undefined;
    if (init.body !== undefined) {
      headers['Content-Type'] = 'application/json';
      body = JSON.stringify(init.body);
    }
    const deadline = new Deadline(init.options?.timeout ?? this.timeout, init.options?.signal);
    let response: Response;
    try {
      response = await this.fetchImpl(url, { method, headers, body: body ?? null, signal: deadline.signal });
    } catch (err) {
      deadline.clear();
      throw this.failure(err, deadline, label, 'connecting');
    }
    if (response.ok) return { response, deadline, label };
    let text = '';
    try {
      text = await response.text();
    } catch (err) {
      throw this.failure(err, deadline, label, 'reading');
    } finally {
      deadline.clear();
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      parsed = undefined;
    }
    if (!isErrorBody(parsed)) {
      throw new MembankError('invalid_response', `${label}: HTTP ${response.status} with a body that is not a membank error: ${snippet(text) || '(empty)'}`, {
        status: response.status,
        request: label,
      });
    }
    const retry = Number(response.headers.get('retry-after'));
    throw new MembankError(parsed.error.code, parsed.error.message, {
      status: response.status,
      retryAfter: response.headers.has('retry-after') && Number.isFinite(retry) ? retry : undefined,
      request: label,
    });
  }

  /** A failure of fetch or of reading a body, as a MembankError. */
  private failure(err: unknown, deadline: Deadline, label: string, phase: 'connecting' | 'reading'): MembankError {
    if (err instanceof MembankError) return err;
    if (deadline.timedOut) {
      const what = phase === 'connecting' ? 'no answer' : 'no further data';
      return new MembankError('timeout', `${label}: ${what} within ${deadline.ms} ms (${this.baseUrl})`, { request: label, cause: err });
    }
    if (deadline.signal.aborted) return new MembankError('aborted', `${label}: aborted by the caller`, { request: label, cause: err });
    if (phase === 'connecting') {
      return new MembankError('unreachable', `${label}: could not reach membank at ${this.baseUrl}: ${describe(err)}`, { request: label, cause: err });
    }
    return new MembankError('interrupted', `${label}: the connection broke while reading the answer: ${describe(err)}`, { request: label, cause: err });
  }

  /** A stream's pieces, with read failures turned into MembankErrors. */
  private async *guard<T>(source: AsyncGenerator<T, void, undefined>, deadline: Deadline, label: string): AsyncGenerator<T, void, undefined> {
    try {
      for (;;) {
        let next: IteratorResult<T, void>;
        try {
          next = await source.next();
        } catch (err) {
          throw this.failure(err, deadline, label, 'reading');
        }
        if (next.done) return;
        yield next.value;
      }
    } finally {
      await source.return();
    }
  }
}

function emptyBody(): ReadableStream<Uint8Array> {
  return new ReadableStream({ start: (controller) => controller.close() });
}
