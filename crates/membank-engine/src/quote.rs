//! Quoting material into a prompt: text a model reads inside our tags (a memory, a day's
//! conversation, a question) is data, and must not be able to end the block it sits in.

/// Quoted material must not be able to close our tags: `</` inside it becomes `< /`.
pub(crate) fn neutralise(text: &str) -> String {
    text.replace("</", "< /")
}
