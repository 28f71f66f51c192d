//! The special tokens a `tokenizer.json` post-processor puts around one sequence, read the
//! same way by the WordPiece and the Unigram tokenizers.

/// The ids of the tokens around a single sequence (`[CLS]`/`[SEP]`, `<s>`/`</s>`) from a
/// `TemplateProcessing` (`X $A Y`), `BertProcessing` or `RobertaProcessing` post-processor.
pub(crate) fn special_ids(value: &serde_json::Value) -> Result<(u32, u32), String> {
    let id_of = |v: &serde_json::Value| v.as_u64().and_then(|id| u32::try_from(id).ok());
    match value.get("type").and_then(|t| t.as_str()) {
        Some("BertProcessing" | "RobertaProcessing") => {
            let cls = value.get("cls").and_then(|v| v.get(1)).and_then(id_of);
            let sep = value.get("sep").and_then(|v| v.get(1)).and_then(id_of);
            cls.zip(sep).ok_or_else(|| "tokenizer.json: post-processor without cls/sep ids".to_owned())
        }
        Some("TemplateProcessing") => {
            let single = value.get("single").and_then(|s| s.as_array());
            let special = |item: Option<&serde_json::Value>| {
                let name = item?.get("SpecialToken")?.get("id")?.as_str()?;
                let ids = value.get("special_tokens")?.get(name)?.get("ids")?.as_array()?;
                if ids.len() == 1 { id_of(&ids[0]) } else { None }
            };
            let is_sequence_a = |item: Option<&serde_json::Value>| {
                item.and_then(|i| i.get("Sequence")).and_then(|s| s.get("id")).and_then(|id| id.as_str()) == Some("A")
            };
            match single {
                Some(items) if items.len() == 3 && is_sequence_a(items.get(1)) => special(items.first())
                    .zip(special(items.get(2)))
                    .ok_or_else(|| "tokenizer.json: template special tokens without ids".to_owned()),
                _ => Err("tokenizer.json: only the single-sequence template `[CLS] $A [SEP]` is supported".to_owned()),
            }
        }
        other => Err(format!("tokenizer.json: post-processor {other:?} is not supported")),
    }
}
