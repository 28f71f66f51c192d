//! Input limits shared by every interface (CLI, REST, MCP), so the same text is accepted
//! or refused everywhere. They are documented in the README.

/// Largest text field (user text, assistant text, note, query), in bytes of UTF-8.
/// 32 KiB is far above a chat message and keeps one memory's embedding meaningful.
pub const MAX_TEXT_BYTES: usize = 32 * 1024;
/// Longest user, tenant, agent or session label, in bytes.
pub const MAX_LABEL_BYTES: usize = 256;
/// Most results one recall may ask for.
pub const MAX_RECALL_K: usize = 200;
/// Most memories one list call returns.
pub const MAX_PAGE_SIZE: usize = 1000;
