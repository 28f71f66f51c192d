/**
 * membank's TypeScript client: {@link MembankClient}, {@link MembankError}, the wire types by
 * name, and the generated `paths`, `components` and `operations` of the OpenAPI document for
 * anything the client does not wrap.
 *
 * @module
 */

export { MembankClient } from './client.js';
export type { ExportOptions, MembankClientOptions, RequestOptions } from './client.js';
export { MembankError, isMembankError } from './errors.js';
export type { ClientErrorCode, MembankErrorCode, ServerErrorCode } from './errors.js';
export type * from './types.js';
export type { components, operations, paths } from './schema.js';
