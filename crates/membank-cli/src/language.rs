//! What the binary says about languages: the commands that move a store from the
//! English-only all-MiniLM-L6-v2 to multilingual-e5-small (in the engine's once-only
//! warning and in `membank check`), and the model an evaluation picks from its data when
//! none is named.
//!
//! The switch is an export and an import into a new database with the multilingual model
//! named: the export carries no vectors unless asked, so the import embeds every memory
//! again with the new model; ids, times, strengths and the event log are kept. The new
//! store records multilingual-e5-small, so later commands on it need only its `--db`.

use std::path::{Path, PathBuf};

use membank_store::{Location, ScriptCensus};

use crate::embedder::{EmbedderChoice, model_for_texts};
use crate::output::shell_word;

/// What a suggested command repeats of the one being run: the configuration file, and
/// whether a model directory was set (flag, environment or file).
#[derive(Debug, Clone, Copy)]
pub struct SwitchFlags<'a> {
    /// `--config`, when one was named.
    pub config: Option<&'a Path>,
    /// Whether the local model directory was configured rather than defaulted.
    pub model_dir_configured: bool,
}

/// Where a switch reads from and writes to: the old database as typed, the export file,
/// the new database, and for PostgreSQL the command that creates the new (empty) database.
struct Targets {
    old: String,
    export: String,
    new: String,
    create: Option<String>,
}

fn targets(db: &Location) -> Targets {
    match db {
        Location::Sqlite(path) => {
            let stem = path.file_stem().map_or_else(|| "membank".into(), |s| s.to_string_lossy().into_owned());
            Targets {
                old: path.to_string_lossy().into_owned(),
                export: path.with_file_name(format!("{stem}.export.jsonl")).to_string_lossy().into_owned(),
                new: path.with_file_name(format!("{stem}-e5.db")).to_string_lossy().into_owned(),
                create: None,
            }
        }
        Location::Postgres(url) => {
            // The password never reaches a message: the URL is shown redacted.
            let old = membank_store::redact(url);
            let (base, name) = match old.split('?').next().unwrap_or(&old).rsplit_once('/') {
                Some((base, name)) if !base.ends_with('/') && !name.is_empty() => (base.to_string(), name.to_string()),
                _ => (old.clone(), "membank".to_string()),
            };
            let new_name = format!("{name}_e5");
            Targets {
                export: format!("{name}.export.jsonl"),
                new: format!("{base}/{new_name}"),
                create: Some(format!("createdb {new_name}")),
                old,
            }
        }
    }
}

/// The commands, in order, that move the store at `db` to multilingual-e5-small.
pub fn switch_commands(flags: SwitchFlags<'_>, db: &Location) -> Vec<String> {
    let config = flags.config.map(|c| format!(" --config {}", shell_word(&c.to_string_lossy()))).unwrap_or_default();
    let t = targets(db);
    let mut commands = vec![format!(
        "membank{config} --db {} export --all-users --output {}",
        shell_word(&t.old),
        shell_word(&t.export)
    )];
    commands.extend(t.create);
    // A model directory set for the old store (flag, MEMBANK_MODEL_DIR, config) would hold
    // the English model: name e5's own for the import.
    let model_dir = if flags.model_dir_configured {
        format!(
            " --model-dir {}",
            shell_word(
                &membank_embed::fetch::default_dir_for(membank_embed::KnownModel::MultilingualE5Small)
                    .to_string_lossy()
            )
        )
    } else {
        String::new()
    };
    commands.push(format!(
        "membank{config} --db {} --local-model multilingual-e5-small{model_dir} import membank-export {}",
        shell_word(&t.new),
        shell_word(&t.export)
    ));
    commands
}

/// The advice of the engine's once-only warning, for the database `db`.
pub fn switch_advice(flags: SwitchFlags<'_>, db: &Location) -> String {
    format!(
        "{}; then use --db {} (it records its model, so none needs naming again)",
        switch_commands(flags, db).join(" && "),
        shell_word(&targets(db).new)
    )
}

/// What `membank check` says about a store's writing: `Some(lines)` when its model reads
/// English only and some active memories are written mostly in other scripts.
pub fn check_report(flags: SwitchFlags<'_>, db: &Location, census: &ScriptCensus) -> Option<Vec<String>> {
    let model = census.model.as_ref()?;
    if census.other_script == 0 || !membank_engine::language::reads_only_english(&model.id) {
        return None;
    }
    let mut lines = vec![format!(
        "warning: {} of {} active memories are written mostly in scripts other than Latin (Chinese, Japanese, Korean, Cyrillic, Arabic, …), which this store's model, {}, cannot read: recall finds them by their words alone. To move the store to multilingual-e5-small (about 100 languages; the import embeds every memory again):",
        census.other_script,
        census.active,
        membank_embed::KnownModel::AllMiniLmL6V2.name()
    )];
    lines.extend(switch_commands(flags, db).into_iter().map(|c| format!("  {c}")));
    Some(lines)
}

/// The embedder an evaluation uses: the configured one, or, with no model named
/// (`auto_model`), the one the writing of its data calls for (read from the first 256 KiB
/// of the first file; keys of the JSON are a few English words per record, the text
/// outweighs them).
pub fn choice_for_files(configured: &EmbedderChoice, auto_model: bool, files: &[&Path]) -> EmbedderChoice {
    if !auto_model || !matches!(configured, EmbedderChoice::Local { .. }) {
        return configured.clone();
    }
    let sample = files.first().map(|file| read_prefix(file, 256 << 10)).unwrap_or_default();
    let model = model_for_texts([sample.as_str()]);
    tracing::info!(model = model.name(), "no local model named: chose it by the writing of the data");
    configured.for_known_model(model)
}

fn read_prefix(path: &Path, limit: u64) -> String {
    use std::io::Read;
    let mut bytes = Vec::new();
    if let Ok(file) = std::fs::File::open(PathBuf::from(path)) {
        let _ = file.take(limit).read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}
