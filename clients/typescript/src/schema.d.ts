// Generated from the OpenAPI document `membank serve` serves at /openapi.json, by
// openapi-typescript 7.13.0 (`npm run generate` in clients/typescript). Do not edit:
// test/schema.test.ts fails when this file differs from what the binary serves.

export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Liveness: the process answers. */
        get: operations["healthz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Prometheus metrics (text exposition format). */
        get: operations["metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Readiness: the model is loaded and the database answers. */
        get: operations["readyz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/about": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Who the caller is and what the server runs: the auth mode, the caller's tenant, user
         *     binding and role, the companion's model (or how to configure one), the forgetting
         *     policy and the embedding model. A client checks its key with it.
         */
        get: operations["about"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/admin/check": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Integrity check of the database (admin key only). */
        get: operations["admin_check"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The users of the caller's tenant. */
        get: operations["users"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One user and its settings; 404 when nothing was ever stored for this user. */
        get: operations["user"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        /** Changes a user's settings (its time zone), creating the user when new. */
        patch: operations["patch_user"];
        trace?: never;
    };
    "/v1/users/{user}/chat": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Talk to the memory-backed companion: recalls for the message, answers from memory with
         *     dates (saying plainly when it does not remember), stores the exchange as a turn and
         *     strengthens the memories it used.
         */
        post: operations["chat"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/chat/stream": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * [`chat`], streamed as server-sent events (`text/event-stream`), for a reply that shows
         *     as it is written:
         * @description - `event: recalled`, data `{"memories": [...]}`: the memories put into the prompt
         *       (labelled `M1`, `M2`, …), before the model is asked;
         *     - `event: delta`, data `{"text": "..."}`: the next piece of the reply (many);
         *     - `event: done`, data: the whole answer, exactly as `POST …/chat` returns it (`used`
         *       lists the memories the reply cites); sent once the exchange is stored;
         *     - `event: error`, data `{"error": {"code", "message"}}`: the model failed midway;
         *       nothing was stored.
         *
         *     Bad input and a missing LLM are refused before the stream starts, with the usual JSON
         *     error and status. There is no `Idempotency-Key` here: retry with `POST …/chat` when a
         *     retry must not store the exchange twice. A client that disconnects does not stop the
         *     exchange from being stored.
         */
        post: operations["chat_stream"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The user's event log (content-free), in log order.
         * @description `seq` is an event's position in the store's log, which all users share: it grows but
         *     skips the numbers of other users' events. Pass the last `seq` of a page as `after` for
         *     the next page. `at` is when the event took effect: an operation given an earlier `now`
         *     (a replay, a recall dated in the past) is logged after events it precedes in time, so
         *     sort by `at`, then `seq`, to read the history in the order things happened.
         */
        get: operations["events"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Everything stored about this user in the lossless `membank-export` format (JSON
         *     Lines, version 1; see the README): a header line, the user, every memory of every
         *     status with all of its state, every event, and an end line with the counts. Streamed
         *     from one consistent snapshot as it is read; a response without its end line was cut
         *     short. `?vectors=true` adds each memory's vector and the user's recent queries.
         */
        get: operations["export"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/maintain": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Run one maintenance cycle over this user now: importance and layers, archiving under
         *     the configured forgetting policy, near-duplicate merging and, with an LLM, fusion and
         *     conflicts. Archives and supersedes, never deletes; every change is an event.
         */
        post: operations["maintain"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/memories": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List memories with their strength and retention now, filtered and paged. */
        get: operations["list"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/memories/used": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Confirm memories were used in a reply (strengthens them; the `used` recall mode). An
         *     archived memory a reminiscing recall returned comes back to active with savings (a
         *     `reminisced` event with `confirmed_used: true`).
         */
        post: operations["used"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/memories/{id}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** One memory with its retention now. */
        get: operations["show"];
        put?: never;
        post?: never;
        /** Erase a memory for good: content, vector and index row go; a content-free tombstone stays. */
        delete: operations["erase"];
        options?: never;
        head?: never;
        /**
         * Edit a memory's text. The edited text is a new memory (returned); the old version is
         *     kept as `superseded` by it, so history is never lost.
         */
        patch: operations["edit"];
        trace?: never;
    };
    "/v1/users/{user}/memories/{id}/curve": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A memory's forgetting curve: retention from where its clock started to a projection
         *     ahead, replayed from its event log through the configured policy, with a jump at each
         *     strengthening recall, the archive threshold and the date it would be archived if never
         *     recalled again. Read-only: it strengthens nothing.
         */
        get: operations["curve"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/memories/{id}/forget": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Forget (archive) a memory; restorable. */
        post: operations["forget"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/memories/{id}/pin": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Pin a memory: it never decays. */
        post: operations["pin"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/memories/{id}/restore": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Restore an archived or superseded memory. */
        post: operations["restore"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/memories/{id}/unpin": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Unpin a memory. */
        post: operations["unpin"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/notes": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Store a free-form note.
         * @description Takes `Idempotency-Key` like `POST /turns`.
         */
        post: operations["remember_note"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/overview": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A user's memories by status (active, archived, superseded, erased) at the end of each
         *     day that had events, in the user's time zone, replayed from the event log; with the
         *     counts now.
         */
        get: operations["overview"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/profile": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The user's global portrait and summary with the days they draw on. */
        get: operations["profile"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/recall": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Find the memories most relevant to a query; strengthens what it returns (per policy).
         * @description Each result is the memory as it is after this recall: `strength`, `last_recalled_at` and
         *     `retention` describe one moment (right after a strengthening recall `retention` is 1
         *     under MemoryBank), and `retention_before` is its retention before the recall, what
         *     `weight_by_retention` ranks by. `score` is reciprocal rank fusion: each ranking a memory
         *     is in (dense: cosine to the query; lexical: BM25 over its words) adds `1 / (60 + rank)`,
         *     so first place adds about 0.0164; `score_parts` holds each term, with the share of the
         *     days a time expression names, a neighbour's loan, and the speaker and retention factors.
         *     `date_filter` says which days were boosted and from which words of the query ("May 4th";
         *     a day named without a year is the most recent such day with memories), or which days
         *     the caller's `from`/`to` restricted the recall to.
         */
        post: operations["recall"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/summarize": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Summarise the user's days incrementally (only days whose turns changed), then the
         *     global summary and portrait if a day changed.
         */
        post: operations["summarize"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/sweep": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Run the forgetting curve over this user's memories (archives, never deletes). */
        post: operations["sweep"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/turns": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Store one exchange.
         * @description Send `Idempotency-Key: <unique string>` to make a retry safe: the same key with the
         *     same body within 24 hours returns the first answer and stores nothing new.
         */
        post: operations["remember_turn"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/users/{user}/turns/batch": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Store several exchanges, in order: all are validated before any is stored, and all
         *     are stored in one transaction or none is.
         * @description Takes `Idempotency-Key` like `POST /turns`.
         */
        post: operations["remember_turns"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /** @description `GET /v1/about`: who the caller is and what the server runs. */
        AboutOut: {
            /** @description `keys` (bearer keys required) or `loopback` (no keys; loopback only). */
            auth: string;
            /** @description The embedding model of the store. */
            embedding_model: string;
            /** @description The forgetting policy. */
            forgetting: components["schemas"]["PolicyOut"];
            llm?: components["schemas"]["LlmOut"] | null;
            /** @description How to configure an LLM. */
            llm_hint: string;
            /** @description `admin`, `tenant` (any user of its tenant), `user` (one user) or `local` (no-auth mode). */
            role: string;
            /** @description The tenant this request acts in. */
            tenant: string;
            /** @description The only user the key may act for (`null`: any user of the tenant). */
            user?: string | null;
            /** @description membank's version. */
            version: string;
        };
        /** @description One archived memory in a sweep report, with the numbers that decided it. */
        ArchivedOut: {
            /**
             * Format: double
             * @description Retention R (FadeMem: `v` now).
             */
            R: number;
            /**
             * Format: double
             * @description Strength S (FadeMem: `v0`, which is 1).
             */
            S: number;
            /**
             * Format: double
             * @description The draw, in stochastic mode.
             */
            draw?: number | null;
            /** @description The memory. */
            id: string;
            /** @description `threshold`, `stochastic` or `fademem`. */
            mode: string;
            /**
             * Format: double
             * @description Time since last recall, in policy units (FadeMem: the effective age in days).
             */
            t: number;
            /**
             * Format: double
             * @description The threshold θ in threshold mode, ε under FadeMem.
             */
            threshold?: number | null;
        };
        /** @description The ids a batch stored, in input order. */
        BatchOut: {
            /** @description The stored memories. */
            memories: components["schemas"]["MemoryOut"][];
        };
        /** @description A message to the companion. */
        ChatIn: {
            /**
             * Format: int32
             * @description How many memories to recall for the prompt (default 8).
             */
            k?: number | null;
            /** @description What the person says. */
            message: string;
            /** @description The message's time (RFC 3339; default now). */
            now?: string | null;
            /** @description Who the companion is (default: membank's companion persona). */
            persona?: string | null;
        };
        /** @description One companion reply. */
        ChatOut: {
            /** @description The model that replied. */
            model: string;
            /** @description Recalled memories left out to fit the model's window. */
            omitted: number;
            /** @description The prompt id. */
            prompt: string;
            /** @description The recall's id in the event log. */
            query_id: string;
            /** @description `retrieved` or `used`. */
            recall_mode: string;
            /** @description Memories put into the prompt, labelled in order. */
            recalled: components["schemas"]["CitedOut"][];
            /** @description The reply. */
            reply: string;
            /** @description Ids strengthened by this exchange. */
            strengthened: string[];
            /** @description The stored exchange. */
            turn: components["schemas"]["MemoryOut"];
            /** @description Memories the reply cites. */
            used: components["schemas"]["CitedOut"][];
        };
        /** @description `GET /v1/admin/check`: the database's integrity check. */
        CheckOut: {
            /** @description No problem found. */
            ok: boolean;
            /** @description Problems found. */
            problems: string[];
            /**
             * Format: int64
             * @description Schema version of the file.
             */
            schema_version: number;
        };
        /** @description A memory the companion drew on, short form. */
        CitedOut: {
            /** @description Its text. */
            content?: string | null;
            /** @description Local day. */
            day: string;
            /** @description Memory id. */
            id: string;
            /** @description `turn`, `note`, `daily_summary`, … */
            kind: string;
            /** @description Its label in the prompt (`M1`, …). */
            label: string;
            /** @description When it was said. */
            occurred_at: string;
            /** @description The recall found it in the archive (reminiscence) and brought it back. */
            reminisced: boolean;
            /**
             * Format: double
             * @description Its fused recall score (for recalled memories).
             */
            score?: number | null;
            /** @description Who said it. */
            source: string;
        };
        /** @description Counts per status. */
        CountsOut: {
            /**
             * Format: int64
             * @description Recallable.
             */
            active: number;
            /**
             * Format: int64
             * @description Forgotten, restorable.
             */
            archived: number;
            /**
             * Format: int64
             * @description Erased.
             */
            erased: number;
            /**
             * Format: int64
             * @description Replaced by a fusion.
             */
            superseded: number;
        };
        /** @description One event of the memory, with the jump it made in the curve. */
        CurveEventOut: components["schemas"]["EventOut"] & {
            /**
             * Format: double
             * @description Retention just after it.
             */
            retention_after?: number | null;
            /**
             * Format: double
             * @description Retention just before the event, for events that change the state (strengthened,
             *     pinned, unpinned, restored); `null` for the others.
             */
            retention_before?: number | null;
            /**
             * Format: double
             * @description The same moment in seconds since 1970.
             */
            t: number;
        };
        /**
         * @description `GET /v1/users/{user}/memories/{id}/curve`: retention over time, replayed from the
         *     event log through the configured policy (the code the sweep runs).
         */
        CurveOut: {
            /**
             * Format: double
             * @description The retention below which a sweep archives an active, unpinned memory (`null` when
             *     the policy draws or ranks instead).
             */
            archive_below?: number | null;
            /** @description Every event about the memory, in log order. */
            events: components["schemas"]["CurveEventOut"][];
            /** @description The memory with its retention now. */
            memory: components["schemas"]["MemoryWithRetention"];
            /** @description The curve in words: what the projection assumes. */
            note: string;
            /** @description The server's now; points after it are projections. */
            now: string;
            /**
             * @description Ascending in time, from where the memory's clock started to the projection's end.
             *     At each strengthening recall (or pin, unpin, restore) there is a point a
             *     millisecond before it and one at it, so a recall is a vertical jump.
             */
            points: components["schemas"]["CurvePointOut"][];
            /** @description `memorybank` or `fademem`. */
            policy: string;
            /**
             * @description When retention falls (or fell) below `archive_below` if the memory is never recalled
             *     again; `null` when pinned, without a threshold, or beyond a century. For a memory
             *     that is no longer active it is when it would have been.
             */
            projected_archive_at?: string | null;
        };
        /** @description One point of a forgetting curve. */
        CurvePointOut: {
            /** @description When (RFC 3339, UTC, milliseconds). */
            at: string;
            /** @description After now: what happens if the memory is never recalled again. */
            projected: boolean;
            /**
             * Format: double
             * @description Retention under the configured policy (FadeMem's `v` under FadeMem; 1 while pinned).
             */
            retention: number;
            /**
             * Format: double
             * @description Strength S in effect.
             */
            strength: number;
            /**
             * Format: double
             * @description The same moment in seconds since 1970 (for plotting).
             */
            t: number;
        };
        /** @description The days a recall was restricted to or boosted towards. */
        DateFilterOut: {
            /** @description A strong boost (a named date, "yesterday") rather than a mild one ("last week"). */
            exact: boolean;
            /** @description First day (YYYY-MM-DD), if bounded. */
            from?: string | null;
            /**
             * @description The time expression in the query the days were read from (`"May 4th"`); absent when
             *     the caller gave `from`/`to`.
             */
            from_query?: string | null;
            /**
             * @description `boost` (a time expression: memories of these days rank first, others still follow)
             *     or `filter` (the caller's `from`/`to`: nothing else is returned).
             */
            mode: string;
            /** @description Last day (YYYY-MM-DD), if bounded. */
            to?: string | null;
            /**
             * @description Present when the query named a day without its year and the recall chose the year:
             *     `latest_with_memories` (the most recent such day, not after `now`, on which the user
             *     has memories) or `latest` (none has: the most recent one not after `now`).
             */
            year_inferred?: string | null;
        };
        /** @description Counts at the end of one day. */
        DayCountsOut: {
            /**
             * Format: int64
             * @description Active memories.
             */
            active: number;
            /**
             * Format: int64
             * @description Archived memories.
             */
            archived: number;
            /** @description The day (YYYY-MM-DD) in the user's time zone. */
            day: string;
            /**
             * Format: int64
             * @description Erased memories.
             */
            erased: number;
            /**
             * Format: int64
             * @description Superseded memories.
             */
            superseded: number;
        };
        /** @description One day of a summarize run. */
        DayOut: {
            /** @description The day. */
            day: string;
            /** @description Its portrait. */
            portrait: components["schemas"]["DerivedOut"];
            /** @description Active turns and notes that day. */
            sources: number;
            /** @description Its summary. */
            summary: components["schemas"]["DerivedOut"];
        };
        /** @description One day of a profile. */
        DayProfileOut: {
            /** @description The day. */
            day: string;
            portrait?: components["schemas"]["MemoryOut"] | null;
            summary?: components["schemas"]["MemoryOut"] | null;
        };
        /** @description What happened to one derived memory: `unchanged`, `made`, `archived` or `absent`. */
        DerivedOut: {
            /** @description The memory concerned (none when absent). */
            id?: string | null;
            /** @description The outcome. */
            outcome: string;
            /** @description The memory it superseded. */
            replaced?: string | null;
        };
        /** @description `PATCH /v1/users/{user}/memories/{id}`: new text. The old version is kept, superseded. */
        EditIn: {
            /** @description New reply of the assistant, for a turn. */
            assistant_text?: string | null;
            /** @description New text of a note. */
            text?: string | null;
            /** @description New words of the person, for a turn. */
            user_text?: string | null;
        };
        /** @description The error body every failing endpoint answers with. */
        ErrorBody: {
            /** @description The error. */
            error: components["schemas"]["ErrorDetail"];
        };
        /** @description A stable code and a human-readable message. */
        ErrorDetail: {
            /** @description Stable, machine-readable code, e.g. `invalid_input`, `not_found`, `storage_unavailable`. */
            code: string;
            /** @description What went wrong, for a person. */
            message: string;
        };
        /** @description One event of the log. */
        EventOut: {
            /**
             * @description When it took effect (an operation given an earlier `now` is logged after events it
             *     precedes, so log order and time order can differ).
             */
            at: string;
            /** @description The numbers behind it. */
            data: Record<string, unknown>;
            /** @description Stable id. */
            id: string;
            /** @description What happened. */
            kind: string;
            /** @description The memory concerned. */
            memory_id?: string | null;
            /**
             * Format: int64
             * @description Position in the store's log, shared by all users: it grows, skipping other users'
             *     events. The cursor `after` takes.
             */
            seq: number;
        };
        /** @description A page of events. */
        EventsOut: {
            /** @description In log order (`seq` ascending). */
            events: components["schemas"]["EventOut"][];
        };
        /** @description `/healthz` and `/readyz`. */
        HealthOut: {
            /**
             * @description `/healthz` only: `keys` when requests need an API key, `loopback` when this
             *     loopback-only server answers without one (so a page can ask for a key before it
             *     sends a request that would be refused).
             */
            auth?: string | null;
            /** @description `ok`, or what is not ready. */
            status: string;
        };
        /** @description A page of memories. */
        ListOut: {
            /**
             * Format: double
             * @description The retention below which the next sweep archives an active, unpinned memory
             *     (θ, or FadeMem's ε); absent when the policy does not archive by a threshold.
             */
            archive_below?: number | null;
            /** @description Counts per status over the whole scope. */
            counts: components["schemas"]["CountsOut"];
            /** @description The memories. */
            memories: components["schemas"]["MemoryWithRetention"][];
            /** @description When retention was computed. */
            now: string;
            /** @description How many of the listed memories are past it. */
            past_threshold: number;
            /** @description Whether anything was ever stored for this user (`false`: no such user). */
            user_known: boolean;
        };
        /** @description The configured LLM. */
        LlmOut: {
            /** @description The model's name at its endpoint. */
            model: string;
        };
        /**
         * @description `POST /v1/users/{user}/maintain`: one maintenance cycle now. The body is optional;
         *     none (or an empty one) means a real cycle at the server's time.
         */
        MaintainIn: {
            /** @description Plan and report only: change nothing and make no LLM calls. */
            dry_run?: boolean | null;
            /**
             * Format: date-time
             * @description The cycle's time (RFC 3339; default now).
             */
            now?: string | null;
        };
        /**
         * @description One maintenance cycle's report for one user. The counts are those of
         *     `{"users","examined","promoted","demoted","archived","merged","fused","conflicts","skipped"}`.
         */
        MaintainOut: {
            /** @description How many were archived (or would be). */
            archived: number;
            /** @description The archived memories with the numbers that decided it. */
            archived_memories: components["schemas"]["ArchivedOut"][];
            /** @description Conflicts decided. */
            conflicts: number;
            /** @description Held back by the per-pass cap. */
            deferred: number;
            /** @description Moved back to the short-term layer. */
            demoted: number;
            /** @description True when nothing was changed. */
            dry_run: boolean;
            /** @description Active memories examined. */
            examined: number;
            /** @description Fused memories made. */
            fused: number;
            /** @description Ids of the fused memories made. */
            fused_memories: string[];
            /** @description Near-duplicates merged. */
            merged: number;
            /** @description The merges. */
            merges: components["schemas"]["MergedOut"][];
            /** @description The cycle's time. */
            now: string;
            /** @description `memorybank` or `fademem`: the policy that decided archiving. */
            policy: string;
            /** @description Moved to the long-term layer. */
            promoted: number;
            /** @description Base importances rated by the LLM. */
            rated: number;
            /** @description What was not done, and why. */
            skipped: string[];
            /** @description The user. */
            user: string;
        };
        /** @description A memory on the wire. */
        MemoryOut: {
            /**
             * Format: double
             * @description FadeMem: recall count decayed with time, as of the last access.
             */
            access_frequency: number;
            /** @description Agent label. */
            agent?: string | null;
            /** @description For turns: the assistant's reply. */
            assistant_text?: string | null;
            /**
             * Format: double
             * @description Importance at ingestion in [0, 1]; `metadata.importance_source` says who set it.
             */
            base_importance: number;
            /** @description The recalled text (`null` once erased). */
            content?: string | null;
            /** @description Local calendar day. */
            day: string;
            /** @description Provenance of derived memories. */
            derived_from?: string[];
            /**
             * Format: double
             * @description FadeMem: the effective age in days kept through the last access (strength is
             *     `exp(-λ·(fade_age + days since last_recalled_at)^β)`).
             */
            fade_age: number;
            /** @description Stable id. */
            id: string;
            /**
             * Format: double
             * @description Importance in [0, 1], as of the last maintenance cycle (at first: the base importance).
             */
            importance: number;
            /** @description `turn`, `note`, … */
            kind: string;
            /** @description Last recall (or `occurred_at`). */
            last_recalled_at: string;
            /** @description FadeMem layer: `short` or `long` (kept up to date by maintenance under either policy). */
            layer: string;
            /** @description Free-form metadata. */
            metadata?: {
                [key: string]: string;
            };
            /** @description When it was said. */
            occurred_at: string;
            /** @description Never decays when true. */
            pinned: boolean;
            /**
             * Format: int32
             * @description Recalls so far.
             */
            recall_count: number;
            /** @description When it was stored. */
            recorded_at: string;
            /** @description Session label. */
            session?: string | null;
            /** @description Who said it. */
            source: string;
            /** @description Lifecycle state. */
            status: string;
            /**
             * Format: double
             * @description Strength S.
             */
            strength: number;
            /** @description The user it belongs to. */
            user: string;
            /** @description For turns: the person's words. */
            user_text?: string | null;
        };
        /** @description A memory with its retention now. */
        MemoryWithRetention: components["schemas"]["MemoryOut"] & {
            /**
             * @description True when the memory is active, not pinned, and its retention is already below the
             *     archive threshold: the next sweep archives it (a history imported with its clock
             *     from its own dates often is).
             */
            past_threshold: boolean;
            /**
             * Format: double
             * @description Retention now under the configured policy: MemoryBank's `exp(-t/S)` or FadeMem's
             *     `v0·exp(-λ·Δt^β)` (1 when pinned).
             */
            retention: number;
        };
        /** @description One near-duplicate merged into a newer copy. */
        MergedOut: {
            /** @description The copy that stays. */
            by: string;
            /** @description The memory superseded. */
            id: string;
            /**
             * Format: double
             * @description Their word overlap.
             */
            overlap: number;
            /**
             * Format: double
             * @description Their cosine.
             */
            similarity: number;
        };
        /** @description `POST /v1/users/{user}/notes`: a free-form fact. */
        NoteIn: {
            /** @description Agent label. */
            agent?: string | null;
            /**
             * @description Where the memory's forgetting clock starts when `occurred_at` is in the past:
             *     `import` (default: when it is stored, so a migrated history starts fresh) or
             *     `event` (at `occurred_at`: an old exchange is old at once, and may already be past
             *     the archive threshold).
             */
            clock_from?: string | null;
            /**
             * Format: double
             * @description How much it matters, in [0, 1]: the base importance FadeMem's forgetting starts from
             *     (`metadata.importance_source` becomes `explicit`). Default: estimated from the text.
             */
            importance?: number | null;
            /** @description Free-form string metadata. */
            metadata?: {
                [key: string]: string;
            } | null;
            /**
             * Format: date-time
             * @description When it happened (RFC 3339; default now; a bare date `YYYY-MM-DD` is the person's
             *     local midnight, in the user's time zone).
             */
            occurred_at?: string | null;
            /** @description Session label. */
            session?: string | null;
            /** @description Who said it: `agent` (default), `user` or `assistant`. */
            source?: string | null;
            /** @description The note. */
            text: string;
        };
        /**
         * @description `GET /v1/users/{user}/overview`: the user's memories by status over time, replayed
         *     from the event log.
         */
        OverviewOut: {
            /** @description The store's counts now (equal to the last day's unless the log was pruned). */
            current: components["schemas"]["CountsOut"];
            /** @description One entry per day with events, ascending: the counts after that day's last event. */
            days: components["schemas"]["DayCountsOut"][];
            /** @description The user's time zone (days are counted in it). */
            time_zone: string;
        };
        /** @description The forgetting policy in force. */
        PolicyOut: {
            /**
             * Format: double
             * @description The retention below which a sweep archives (`null` when it draws or ranks).
             */
            archive_below?: number | null;
            /**
             * Format: double
             * @description The scaled form's exponent `k`.
             */
            importance_exponent: number;
            /**
             * @description How importance enters the strength: `linear` (`S + w·I`), `odds` (`S + w·I/(1−I)`) or
             *     `scaled` (`S·(1 + w·I/(1−I))^k`).
             */
            importance_form: string;
            /**
             * Format: double
             * @description How much a memory's importance `I` weighs on MemoryBank's curve `exp(-t / S_eff)`
             *     (`w` in `importance_form`).
             */
            importance_weight: number;
            /** @description How a sweep decides: `threshold`, `stochastic` or `rank`. */
            mode: string;
            /** @description `memorybank` or `fademem`. */
            policy: string;
            /**
             * @description Spaced strengthening: only a memory's first recall in a unit of time (a UTC day by
             *     default) adds to `S`; later recalls in that unit restart its clock only.
             */
            spaced_recall: boolean;
            /**
             * Format: int64
             * @description The unit of `t` in MemoryBank's `exp(-t/S)`, in seconds.
             */
            unit_seconds: number;
        };
        /** @description A user's profile. */
        ProfileOut: {
            /** @description The days they draw on. */
            days: components["schemas"]["DayProfileOut"][];
            global_portrait?: components["schemas"]["MemoryOut"] | null;
            global_summary?: components["schemas"]["MemoryOut"] | null;
        };
        /**
         * @description One recall result: the memory as it is after this recall (`strength`,
         *     `last_recalled_at` and `retention` describe one moment), with its scores.
         */
        RecallHitOut: components["schemas"]["MemoryOut"] & {
            /** @description Its place in the dense ranking (cosine), from 1, if it was in it. */
            dense_rank?: number | null;
            /**
             * Format: double
             * @description Its cosine similarity to the query, if a dense candidate (it decides `dense_rank`).
             */
            dense_score?: number | null;
            /** @description Its place in the lexical ranking (BM25), from 1, if it was in it. */
            lexical_rank?: number | null;
            /**
             * Format: double
             * @description Its BM25 score, if a lexical candidate (it decides `lexical_rank`).
             */
            lexical_score?: number | null;
            /**
             * Format: double
             * @description The part of `score` lent by an adjacent turn (neighbour expansion), if any.
             */
            neighbour_score?: number | null;
            /**
             * @description Found in the archive by reminiscence: archived when this recall ranked it (a
             *     strengthening recall has brought it back, so `status` is then `active`). Always
             *     false in an audit (`include_archived`).
             */
            reminisced: boolean;
            /**
             * Format: double
             * @description Its retention at the query's time after this recall (1 just after a strengthening
             *     recall under MemoryBank); equal to `retention_before` when it was not strengthened.
             */
            retention: number;
            /**
             * Format: double
             * @description Its retention at the query's time before this recall (what `weight_by_retention`
             *     ranks by).
             */
            retention_before: number;
            /**
             * Format: double
             * @description The fused score this hit was ranked by: reciprocal rank fusion, the sum over the
             *     rankings the memory is in of `weight / (k + rank)` with k = 60 (first place in one
             *     ranking adds 1/61 ≈ 0.0164), plus a neighbour's loan, times a named speaker's boost
             *     and, when asked, `retention_before`. `score_parts` holds each term.
             */
            score: number;
            /** @description How `score` was made. */
            score_parts: components["schemas"]["ScorePartsOut"];
        };
        /** @description `POST /v1/users/{user}/recall`. */
        RecallIn: {
            /** @description Narrow to an agent label. */
            agent?: string | null;
            /**
             * Format: date
             * @description Only memories on or after this day (YYYY-MM-DD).
             */
            from?: string | null;
            /** @description Include archived memories (audits; never strengthened). */
            include_archived?: boolean | null;
            /**
             * Format: int32
             * @description How many results (default 5, at most 200).
             */
            k?: number | null;
            /** @description Only these kinds (`turn`, `note`, …). */
            kinds?: ("turn" | "note" | "daily_summary" | "global_summary" | "daily_portrait" | "global_portrait" | "fused")[] | null;
            /**
             * Format: date-time
             * @description The query's own time (RFC 3339; default now). Relative dates and strengthening use it.
             */
            now?: string | null;
            /** @description The query, usually the person's new message. */
            query: string;
            /**
             * @description Whether to consult the archive (reminiscence): `auto` (default) when the active
             *     memories do not answer well (the best archived cosine to the query leads the best
             *     active one by more than `[recall] reminisce_margin`), `never`, or `always`. Hits
             *     from the archive carry `reminisced: true`, and a strengthening recall brings them
             *     back with savings. Ignored by audits (`include_archived`).
             * @example auto
             */
            reminisce?: string | null;
            /** @description Narrow to a session label. */
            session?: string | null;
            /** @description `false`: inspect only, log and strengthen nothing. Default: per policy. */
            strengthen?: boolean | null;
            /**
             * Format: date
             * @description Only memories on or before this day (YYYY-MM-DD).
             */
            to?: string | null;
            /** @description Rank fading memories lower. */
            weight_by_retention?: boolean | null;
        };
        /** @description A recall's answer: `{"query_id", "now", "strengthened", "results": [...], "reminiscence": {...}}`. */
        RecallOut: {
            date_filter?: components["schemas"]["DateFilterOut"] | null;
            /** @description The query's time. */
            now: string;
            /** @description Identifies the recall in the event log. */
            query_id: string;
            /** @description Whether the archive was consulted, and the scores that decided it. */
            reminiscence: components["schemas"]["ReminiscenceOut"];
            /** @description Best first. */
            results: components["schemas"]["RecallHitOut"][];
            /** @description Whether the results were strengthened. */
            strengthened: boolean;
            /**
             * @description The days a time expression in the query referred to (`[from, to]`, the days whose
             *     memories were boosted or kept); `null` when the query named no time.
             */
            time_range?: string[] | null;
            /**
             * @description Whether anything was ever stored for this user; `false` means no such user (a
             *     mistyped name, say), not memories that did not match.
             */
            user_known: boolean;
        };
        /**
         * @description What reminiscence did in a recall:
         *     `{"mode","probed","consulted","archived_hits","active_best","active_bar","archived_best","margin"}`.
         *
         *     In `auto` mode, before the ranking, one dense search with the archive admitted takes the
         *     first k + 16 candidates: `archived_best` (`b`) is the best archived cosine among them,
         *     `active_bar` (`a_k`) the cosine of the k-th active one, and the archive is consulted when
         *     `b > active_bar + margin` (or when fewer than k of the candidates are active and some are
         *     archived). Consulted, the ranking is made over the active and the archived memories and
         *     the archived hits are `reminisced`; otherwise over the active memories alone.
         */
        ReminiscenceOut: {
            /**
             * Format: double
             * @description `a_k`: the cosine of the k-th active dense candidate, the bar (`auto`; null when
             *     fewer than k active memories are candidates).
             */
            active_bar?: number | null;
            /**
             * Format: double
             * @description `a`: the best cosine among the active dense candidates (`auto`; null without any).
             */
            active_best?: number | null;
            /**
             * Format: double
             * @description `b`: the best cosine among the archived memories the probe found (`auto`; null when
             *     none was among its first candidates).
             */
            archived_best?: number | null;
            /** @description How many of the results came from the archive (`reminisced`). */
            archived_hits: number;
            /** @description Whether the ranking was made over the active and the archived memories. */
            consulted: boolean;
            /**
             * Format: double
             * @description The lead `b` needed over `a_k` (`[recall] reminisce_margin`).
             */
            margin: number;
            /** @description `auto`, `never` or `always`: the mode the recall ran in. */
            mode: string;
            /** @description Whether the archive was searched to decide (`auto`, outside audits). */
            probed: boolean;
        };
        /**
         * @description The terms of a recall score:
         *     `score = (dense + lexical + date + feedback + neighbour) × speaker × retention × diversity`,
         *     except a day's summary put first (`day_summary`), whose score is raised to the best of the
         *     others.
         */
        ScorePartsOut: {
            /**
             * Format: double
             * @description Added by the two rankings restricted to the days of the query's time expression (0 without one).
             */
            date: number;
            /** @description Put first as the summary of a day the query names ("what did we talk about on May 4th?"). */
            day_summary: boolean;
            /**
             * Format: double
             * @description Added by the dense ranking: `weight / (k + dense_rank)` (0 if not in it).
             */
            dense: number;
            /**
             * Format: double
             * @description Factor of day diversity (`[recall] day_diversity`; 1 when off).
             */
            diversity: number;
            /**
             * Format: double
             * @description Added by the second-stage rankings: vector feedback and the model's rewritten
             *     queries (`[recall] feedback_weight`, `query_rewrite_weight`; 0 when off).
             */
            feedback: number;
            /**
             * Format: double
             * @description Added by the lexical ranking: `weight / (k + lexical_rank)` (0 if not in it).
             */
            lexical: number;
            /**
             * Format: double
             * @description Lent by an adjacent memory (0 if none).
             */
            neighbour: number;
            /**
             * Format: double
             * @description Factor of retention weighting: `retention_before`, or 1 when off.
             */
            retention: number;
            /**
             * Format: double
             * @description Factor for a participant the query names (1 if none).
             */
            speaker: number;
        };
        /** @description Options of a summarisation run. */
        SummarizeIn: {
            /** @description Redo every day even if nothing changed (after a prompt or model change). */
            force?: boolean | null;
        };
        /** @description A summarize run. */
        SummarizeOut: {
            /** @description Each day. */
            days: components["schemas"]["DayOut"][];
            /** @description The global portrait. */
            global_portrait: components["schemas"]["DerivedOut"];
            /** @description The global summary. */
            global_summary: components["schemas"]["DerivedOut"];
            /** @description Model calls made. */
            llm_calls: number;
            /** @description The model. */
            model: string;
        };
        /** @description `POST /v1/users/{user}/sweep`. */
        SweepIn: {
            /** @description Report only; change nothing. */
            dry_run?: boolean | null;
            /**
             * Format: double
             * @description Largest fraction of examined memories to archive in this pass (0..=1).
             */
            max_archive_fraction?: number | null;
            /**
             * Format: date-time
             * @description The sweep's time (RFC 3339; default now).
             */
            now?: string | null;
        };
        /** @description A sweep's report. */
        SweepOut: {
            /** @description Archived (or would be). */
            archived: components["schemas"]["ArchivedOut"][];
            /** @description Held back by the per-pass cap. */
            deferred: number;
            /** @description True when nothing was changed. */
            dry_run: boolean;
            /** @description Active memories examined. */
            examined: number;
            /** @description Examined minus archived. */
            kept: number;
            /** @description The sweep's time. */
            now: string;
        };
        /** @description `POST /v1/users/{user}/turns/batch`: several exchanges, stored in order. */
        TurnBatchIn: {
            /** @description The turns (at most the configured batch size). */
            turns: components["schemas"]["TurnIn"][];
        };
        /** @description `POST /v1/users/{user}/turns`: one exchange. */
        TurnIn: {
            /** @description Agent label. */
            agent?: string | null;
            /** @description The assistant's reply. */
            assistant_text?: string | null;
            /**
             * @description Where the memory's forgetting clock starts when `occurred_at` is in the past:
             *     `import` (default: when it is stored, so a migrated history starts fresh) or
             *     `event` (at `occurred_at`: an old exchange is old at once, and may already be past
             *     the archive threshold).
             */
            clock_from?: string | null;
            /**
             * Format: double
             * @description How much it matters, in [0, 1]: the base importance FadeMem's forgetting starts from
             *     (`metadata.importance_source` becomes `explicit`). Default: estimated from the text.
             */
            importance?: number | null;
            /** @description Free-form string metadata. */
            metadata?: {
                [key: string]: string;
            } | null;
            /**
             * Format: date-time
             * @description When it was said (RFC 3339; default now; at most a day in the future; a bare date
             *     `YYYY-MM-DD` is the person's local midnight, in the user's time zone).
             */
            occurred_at?: string | null;
            /** @description Session label. */
            session?: string | null;
            /** @description What the person said. */
            user_text: string;
        };
        /** @description `POST /v1/users/{user}/memories/used`: confirm memories were used (the `used` recall mode). */
        UsedIn: {
            /** @description Memory ids (at most the configured batch size). */
            ids: string[];
            /** @description The recall they came from. */
            query_id?: string | null;
        };
        /** @description A user of the tenant. */
        UserOut: {
            /** @description First write. */
            created_at: string;
            /** @description IANA time zone its days are counted in. */
            time_zone: string;
            /** @description The user id. */
            user: string;
        };
        /** @description `PATCH /v1/users/{user}`: the settings to change. */
        UserPatchIn: {
            /**
             * @description IANA time zone (`Europe/Lisbon`) the user's days are counted in from now on, and
             *     bare dates read in; the days of memories already stored keep their zone.
             */
            time_zone?: string | null;
        };
        /** @description The users of the caller's tenant. */
        UsersOut: {
            /** @description In creation order. */
            users: components["schemas"]["UserOut"][];
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    healthz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Alive */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HealthOut"];
                };
            };
        };
    };
    metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Prometheus text format */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
        };
    };
    readyz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Ready */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HealthOut"];
                };
            };
            /** @description Not ready */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["HealthOut"];
                };
            };
        };
    };
    about: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The caller and the server */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AboutOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    admin_check: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The check's result */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CheckOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    users: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Users in creation order */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UsersOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    user: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The person the memories are about (trimmed; no control characters). */
                user: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The user */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UserOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    patch_user: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The person the memories are about (trimmed; no control characters). */
                user: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UserPatchIn"];
            };
        };
        responses: {
            /** @description The user as it is now */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["UserOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    chat: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key and body within 24 h returns the first answer, stores no second exchange and asks the model nothing */
                "Idempotency-Key"?: string | null;
            };
            path: {
                /** @description The person the memories are about (trimmed; no control characters). */
                user: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ChatIn"];
            };
        };
        responses: {
            /** @description The reply and the memories it drew on */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ChatOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    chat_stream: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The person the memories are about (trimmed; no control characters). */
                user: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["ChatIn"];
            };
        };
        responses: {
            /** @description Server-sent events: `recalled`, then `delta` (many), then `done` (a ChatOut) or `error` */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": string;
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    events: {
        parameters: {
            query?: {
                /** @description Only events about this memory. */
                memory?: string;
                /** @description Only events after this log position (`seq`; the last one of the previous page). */
                after?: number;
                /** @description Page size (default 1000, at most 10000). */
                limit?: number;
            };
            header?: never;
            path: {
                /** @description The person the memories are about (trimmed; no control characters). */
                user: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page of events */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EventsOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    export: {
        parameters: {
            query?: {
                /** @description Include each memory's vector (and the model that made it) and the user's recent recall queries. */
                vectors?: boolean;
            };
            header?: never;
            path: {
                /** @description The person the memories are about (trimmed; no control characters). */
                user: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The export, JSON Lines */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/x-ndjson": string;
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    maintain: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The person the memories are about (trimmed; no control characters). */
                user: string;
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["MaintainIn"] | null;
            };
        };
        responses: {
            /** @description What the cycle examined and did (or would do, on a dry run) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MaintainOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    list: {
        parameters: {
            query?: {
                /** @description Comma-separated statuses: active (default), archived, superseded, erased. */
                status?: string;
                /** @description Comma-separated kinds. */
                kind?: string;
                /** @description Only pinned memories. */
                pinned?: boolean;
                /** @description Only memories on or after this day (YYYY-MM-DD). */
                from?: string;
                /** @description Only memories on or before this day (YYYY-MM-DD). */
                to?: string;
                /** @description Page size (default 50, at most 1000). */
                limit?: number;
                /** @description Memories to skip. */
                offset?: number;
                /** @description `newest` (default) or `oldest` first. */
                order?: string;
            };
            header?: never;
            path: {
                /** @description The person the memories are about (trimmed; no control characters). */
                user: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description A page, newest first unless asked otherwise */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ListOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    used: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The person the memories are about (trimmed; no control characters). */
                user: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["UsedIn"];
            };
        };
        responses: {
            /** @description The strengthened memories */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BatchOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    show: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The person the memory is about. */
                user: string;
                /** @description The memory id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The memory */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryWithRetention"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    erase: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The person the memory is about. */
                user: string;
                /** @description The memory id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The tombstone */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    edit: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The person the memory is about. */
                user: string;
                /** @description The memory id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["EditIn"];
            };
        };
        responses: {
            /** @description The new version; `derived_from` names the old one */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    curve: {
        parameters: {
            query?: {
                /**
                 * @description How many days past now to project (default: a little past the projected archive
                 *     date, at least 30 days; at most 3650).
                 */
                days_ahead?: number;
            };
            header?: never;
            path: {
                /** @description The person the memory is about. */
                user: string;
                /** @description The memory id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The curve, its events and the projection */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CurveOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    forget: {
        parameters: {
            query?: {
                /** @description Why (kept in the event log). */
                reason?: string;
            };
            header?: never;
            path: {
                /** @description The person the memory is about. */
                user: string;
                /** @description The memory id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The archived memory */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    pin: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The person the memory is about. */
                user: string;
                /** @description The memory id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The pinned memory */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    restore: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The person the memory is about. */
                user: string;
                /** @description The memory id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The restored memory */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    unpin: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The person the memory is about. */
                user: string;
                /** @description The memory id. */
                id: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The unpinned memory */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    remember_note: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key and body within 24 h returns the first answer and stores nothing */
                "Idempotency-Key"?: string | null;
            };
            path: {
                /** @description The person the memories are about (trimmed; no control characters). */
                user: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["NoteIn"];
            };
        };
        responses: {
            /** @description Stored; recallable at once */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    overview: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The person the memories are about (trimmed; no control characters). */
                user: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Counts over time */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["OverviewOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    profile: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The person the memories are about (trimmed; no control characters). */
                user: string;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Portrait and summary (empty until summarised) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ProfileOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    recall: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The person the memories are about (trimmed; no control characters). */
                user: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["RecallIn"];
            };
        };
        responses: {
            /** @description Best first; each score is that memory's own */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RecallOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    summarize: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The person the memories are about (trimmed; no control characters). */
                user: string;
            };
            cookie?: never;
        };
        /** @description Optional; `{}` by default */
        requestBody: {
            content: {
                "application/json": components["schemas"]["SummarizeIn"];
            };
        };
        responses: {
            /** @description What was made, kept or archived */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SummarizeOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    sweep: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The person the memories are about (trimmed; no control characters). */
                user: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["SweepIn"];
            };
        };
        responses: {
            /** @description What was examined and archived, with the numbers */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SweepOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    remember_turn: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key and body within 24 h returns the first answer and stores nothing */
                "Idempotency-Key"?: string | null;
            };
            path: {
                /** @description The person the memories are about (trimmed; no control characters). */
                user: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TurnIn"];
            };
        };
        responses: {
            /** @description Stored; recallable at once */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["MemoryOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
    remember_turns: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes a retry safe: the same key and body within 24 h returns the first answer and stores nothing */
                "Idempotency-Key"?: string | null;
            };
            path: {
                /** @description The person the memories are about (trimmed; no control characters). */
                user: string;
            };
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": components["schemas"]["TurnBatchIn"];
            };
        };
        responses: {
            /** @description Stored, in input order */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BatchOut"];
                };
            };
            /** @description Malformed JSON, query string or path. */
            400: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Missing, unknown or revoked API key. */
            401: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The key may not act for this tenant or user. */
            403: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description No such memory in this scope. */
            404: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The operation does not apply to the memory's state. */
            409: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Values break a rule (empty text, text too long, bad time, k out of range). */
            422: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Too many requests for this key. */
            429: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Internal error. */
            500: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description Model unavailable or server not ready, or database unreachable now (`storage_unavailable`). */
            503: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
            /** @description The database's disk is full; nothing of the request was stored, changed or erased. */
            507: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ErrorBody"];
                };
            };
        };
    };
}
