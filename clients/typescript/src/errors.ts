/**
 * The one error every client method throws: {@link MembankError}, with the REST error's
 * stable `code`, the HTTP `status` and the server's `message`, or a client-side code when no
 * answer came (`unreachable`, `timeout`, `aborted`) or the answer was not membank's
 * (`invalid_response`, `interrupted`).
 *
 * @module
 */

/** The codes the server answers with (`{"error": {"code", "message"}}`; README, "Errors"). */
export type ServerErrorCode =
  | 'bad_request'
  | 'unauthorized'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'invalid_input'
  | 'rate_limited'
  | 'internal'
  | 'unavailable'
  | 'storage_unavailable'
  | 'storage_full';

/**
 * The codes the client gives when there is no membank answer to report:
 *
 * - `unreachable`: no connection (refused, unknown host, reset before an answer);
 * - `timeout`: no answer (or, on a stream, no next piece) within the client's `timeout`;
 * - `aborted`: the caller's `AbortSignal` fired;
 * - `invalid_response`: an answer that is not membank's (not JSON, or an error body of
 *   another shape, e.g. a proxy's HTML page);
 * - `interrupted`: the connection broke while the answer was being read, or a stream ended
 *   before its last event (for a chat stream: the exchange may or may not have been stored).
 */
export type ClientErrorCode = 'unreachable' | 'timeout' | 'aborted' | 'invalid_response' | 'interrupted';

/** Every code a {@link MembankError} can carry; a newer server may send codes not listed. */
export type MembankErrorCode = ServerErrorCode | ClientErrorCode | (string & {});

/** What a request failed with. */
export class MembankError extends Error {
  override readonly name = 'MembankError';
  /** Stable and machine-readable: branch on this, not on `message`. */
  readonly code: MembankErrorCode;
  /**
   * The HTTP status of the answer that carried the error; 0 when there was none (the
   * client codes `unreachable`, `timeout` and `aborted`, and arguments refused before
   * anything was sent). An `error` event inside a chat stream arrives on a 200 answer.
   */
  readonly status: number;
  /** With `rate_limited` and `storage_unavailable`: the seconds the server asked to wait (`Retry-After`). */
  readonly retryAfter: number | undefined;
  /** The method and URL of the request, for logs. */
  readonly request: string | undefined;

  constructor(code: MembankErrorCode, message: string, options: { status?: number; retryAfter?: number | undefined; request?: string; cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = options.status ?? 0;
    this.retryAfter = options.retryAfter;
    this.request = options.request;
  }
}

/** Whether `err` is a {@link MembankError}, optionally with one of the given codes. */
export function isMembankError<C extends MembankErrorCode>(err: unknown, ...codes: C[]): err is MembankError & { readonly code: C } {
  return err instanceof MembankError && (codes.length === 0 || (codes as readonly string[]).includes(err.code));
}
