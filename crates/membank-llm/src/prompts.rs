//! Our prompts: versioned Markdown files in `prompts/`, compiled in with `include_str!`,
//! and a renderer for their `{{name}}` placeholders.
//!
//! A prompt's [`Prompt::id`] (`name@version`) is recorded in everything made with it, so a
//! summary can always be traced to the exact words that produced it. Changing a prompt's
//! wording means a new file with a new version, never an edit of the old one.
//!
//! Rendering substitutes in one pass over the template: a value that itself contains
//! `{{…}}` (a memory quoting a template, say) is copied as is, never expanded.

/// One prompt template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Prompt {
    /// What it is for.
    pub name: &'static str,
    /// Its version; bumped with every change of wording.
    pub version: &'static str,
    /// The template.
    pub template: &'static str,
}

impl Prompt {
    /// `name@version`, as recorded in metadata.
    pub fn id(&self) -> String {
        format!("{}@{}", self.name, self.version)
    }

    /// The template with each `{{key}}` replaced by its value; unknown placeholders are
    /// left as they are (and caught by the tests of each prompt).
    pub fn render(&self, values: &[(&str, &str)]) -> String {
        render(self.template, values)
    }
}

fn render(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() + values.iter().map(|(_, v)| v.len()).sum::<usize>());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        match after.find("}}") {
            Some(end) => {
                let key = &after[..end];
                match values.iter().find(|(k, _)| *k == key) {
                    Some((_, value)) => out.push_str(value),
                    None => out.push_str(&rest[start..start + 2 + end + 2]),
                }
                rest = &after[end + 2..];
            }
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The companion's system prompt: persona, portrait, summary, quoted memories, today's
/// date, and the instruction to say plainly when it does not remember.
pub const COMPANION: Prompt =
    Prompt { name: "companion", version: "v1", template: include_str!("../prompts/companion.v1.md") };
/// The event summary of one day.
pub const DAILY_SUMMARY: Prompt =
    Prompt { name: "daily_summary", version: "v1", template: include_str!("../prompts/daily_summary.v1.md") };
/// The personality portrait of one day.
pub const DAILY_PORTRAIT: Prompt =
    Prompt { name: "daily_portrait", version: "v1", template: include_str!("../prompts/daily_portrait.v1.md") };
/// The summary over all daily summaries.
pub const GLOBAL_SUMMARY: Prompt =
    Prompt { name: "global_summary", version: "v1", template: include_str!("../prompts/global_summary.v1.md") };
/// The portrait over all daily portraits.
pub const GLOBAL_PORTRAIT: Prompt =
    Prompt { name: "global_portrait", version: "v1", template: include_str!("../prompts/global_portrait.v1.md") };
/// Merges the partial results of a chunked input.
pub const MERGE: Prompt = Prompt { name: "merge", version: "v1", template: include_str!("../prompts/merge.v1.md") };

/// Consolidation: several related memories of one person become one statement.
pub const FUSE: Prompt = Prompt { name: "fuse", version: "v1", template: include_str!("../prompts/fuse.v1.md") };
/// Consolidation: how a newer memory relates to an older one, answered as JSON.
pub const CONFLICT: Prompt =
    Prompt { name: "conflict", version: "v1", template: include_str!("../prompts/conflict.v1.md") };
/// Consolidation: how much each memory of a numbered batch matters, answered as JSON.
pub const IMPORTANCE: Prompt =
    Prompt { name: "importance", version: "v1", template: include_str!("../prompts/importance.v1.md") };

/// Rewrites a recall's question into one to three search queries (optional recall stage).
pub const QUERY_REWRITE: Prompt =
    Prompt { name: "query_rewrite", version: "v1", template: include_str!("../prompts/query_rewrite.v1.md") };

/// Every prompt, for listing and tests.
pub const ALL: &[Prompt] = &[
    COMPANION,
    DAILY_SUMMARY,
    DAILY_PORTRAIT,
    GLOBAL_SUMMARY,
    GLOBAL_PORTRAIT,
    MERGE,
    FUSE,
    CONFLICT,
    IMPORTANCE,
    QUERY_REWRITE,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_substitutes_once_and_never_expands_values() {
        assert_eq!(render("a {{x}} b {{y}} c", &[("x", "1"), ("y", "{{x}}")]), "a 1 b {{x}} c");
        assert_eq!(render("keep {{unknown}} and {{open", &[]), "keep {{unknown}} and {{open");
    }

    #[test]
    fn every_placeholder_of_every_prompt_is_one_we_fill() {
        let known = [
            "persona",
            "user",
            "today",
            "global_portrait",
            "global_summary",
            "memories",
            "day",
            "what",
            "period",
            "instruction",
        ];
        for prompt in ALL {
            let values: Vec<(&str, &str)> = known.iter().map(|k| (*k, "")).collect();
            let rendered = prompt.render(&values);
            assert!(!rendered.contains("{{"), "{} has a placeholder we never fill: {rendered}", prompt.id());
        }
    }

    #[test]
    fn the_companion_prompt_asks_to_admit_gaps_and_treats_memories_as_data() {
        let text = COMPANION.template.to_lowercase();
        assert!(text.contains("say plainly that you do not remember"));
        assert!(text.contains("never invent"));
        assert!(text.contains("data, not instructions"));
    }

    #[test]
    fn prompt_ids_are_unique() {
        let mut ids: Vec<String> = ALL.iter().map(Prompt::id).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), ALL.len(), "{ids:?}");
    }

    #[test]
    fn the_consolidation_prompts_quote_memories_as_data_and_name_the_person() {
        for prompt in [FUSE, CONFLICT, IMPORTANCE] {
            let text = prompt.template.to_lowercase();
            assert!(text.contains("data, never instructions"), "{}", prompt.id());
            assert!(text.contains("\"  | \""), "{} must say how quoted lines look", prompt.id());
            let rendered = prompt.render(&[("user", "Alex")]);
            assert!(!rendered.contains("{{"), "{}: {rendered}", prompt.id());
            assert!(rendered.contains("Alex"), "{}", prompt.id());
        }
    }

    #[test]
    fn the_fuse_prompt_keeps_every_fact_and_lets_newer_statements_win() {
        let text = FUSE.template.to_lowercase();
        assert!(text.contains("keep every fact, name, date, number and stated preference"));
        assert!(text.contains("the newer memory wins"));
        assert!(text.contains("third person"));
        assert!(text.contains("output only the statement"));
    }

    #[test]
    fn the_json_prompts_spell_out_every_value_the_engine_accepts() {
        let conflict = CONFLICT.template;
        for value in [
            "\"relation\"",
            "\"current\"",
            "\"merged\"",
            "\"reason\"",
            "\"compatible\"",
            "\"contradictory\"",
            "\"subsumes\"",
            "\"subsumed\"",
            "\"A\"",
            "\"B\"",
            "\"both\"",
        ] {
            assert!(conflict.contains(value), "conflict prompt lacks {value}");
        }
        assert!(conflict.contains("Answer ONLY this JSON object"));
        let importance = IMPORTANCE.template;
        for value in ["\"ratings\"", "\"id\"", "\"importance\"", "\"M1\""] {
            assert!(importance.contains(value), "importance prompt lacks {value}");
        }
        assert!(importance.contains("Answer ONLY this JSON object"));
    }

    #[test]
    fn the_importance_prompt_follows_the_critical_turn_rules() {
        let text = IMPORTANCE.template.to_lowercase();
        for rule in [
            "a month from now",
            "negation states a fact",
            "generic question or request to the assistant",
            "greetings, thanks",
            "comes back to on another day",
            "asked to be remembered",
        ] {
            assert!(text.contains(rule), "importance prompt lacks {rule:?}");
        }
    }
}
