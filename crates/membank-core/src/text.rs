//! Text rules of the lexical (BM25) index, shared by indexing and querying so both cut
//! text the same way.
//!
//! Latin-script and other alphabetic text is split into lowercase words. Chinese,
//! Japanese and Korean runs are cut into overlapping character bigrams (a lone character
//! stays a unigram): SQLite FTS5's default tokenizer would keep a whole CJK run as one
//! token, so "我的猫叫咪咪" could only ever match itself. Bigrams need no dictionary and
//! are the standard baseline for CJK retrieval.

/// True for characters of scripts written without spaces between words.
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF   // Hiragana, Katakana
        | 0x3400..=0x4DBF // CJK Extension A
        | 0x4E00..=0x9FFF // CJK Unified Ideographs
        | 0xF900..=0xFAFF // CJK Compatibility Ideographs
        | 0xAC00..=0xD7AF // Hangul syllables
        | 0x20000..=0x2FA1F // Extensions B–F, compatibility supplement
    )
}

/// Cuts text into index terms: lowercase words, and bigrams of CJK runs.
pub fn terms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut cjk_run: Vec<char> = Vec::new();
    let flush_word = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() {
            out.push(std::mem::take(word));
        }
    };
    let flush_cjk = |run: &mut Vec<char>, out: &mut Vec<String>| {
        match run.len() {
            0 => {}
            1 => out.push(run[0].to_string()),
            _ => out.extend(run.windows(2).map(|pair| pair.iter().collect::<String>())),
        }
        run.clear();
    };
    for c in text.chars() {
        if is_cjk(c) {
            flush_word(&mut word, &mut out);
            cjk_run.push(c);
        } else if c.is_alphanumeric() {
            flush_cjk(&mut cjk_run, &mut out);
            word.extend(c.to_lowercase());
        } else {
            flush_word(&mut word, &mut out);
            flush_cjk(&mut cjk_run, &mut out);
        }
    }
    flush_word(&mut word, &mut out);
    flush_cjk(&mut cjk_run, &mut out);
    out
}

/// The text stored in the full-text index for `text`: its terms joined by spaces.
pub fn index_text(text: &str) -> String {
    terms(text).join(" ")
}

/// English function words that carry no topic; dropped from queries (not from the index)
/// so a question's "what did I say about…" does not pull in every memory.
const STOPWORDS: &[&str] = &[
    "a", "about", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did", "do", "does", "for",
    "from", "had", "has", "have", "he", "her", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "me", "my", "of", "on",
    "or", "our", "she", "so", "that", "the", "their", "them", "then", "there", "these", "they", "this", "to", "was", "we", "were", "what",
    "when", "where", "which", "who", "why", "will", "with", "would", "you", "your",
];

/// The distinct terms of a query worth searching for: stopwords dropped unless nothing
/// else is left. Order of first appearance is kept.
pub fn query_terms(query: &str) -> Vec<String> {
    let all = terms(query);
    let mut seen = std::collections::HashSet::new();
    let content: Vec<String> = all.iter().filter(|t| !STOPWORDS.contains(&t.as_str())).filter(|t| seen.insert((*t).clone())).cloned().collect();
    if !content.is_empty() {
        return content;
    }
    let mut seen = std::collections::HashSet::new();
    all.into_iter().filter(|t| seen.insert(t.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin_words_are_lowercased() {
        assert_eq!(terms("My cat's name is Miso!"), ["my", "cat", "s", "name", "is", "miso"]);
        assert_eq!(terms("Café au lait, 2024"), ["café", "au", "lait", "2024"]);
    }

    #[test]
    fn cjk_runs_become_bigrams() {
        assert_eq!(terms("我的猫叫咪咪"), ["我的", "的猫", "猫叫", "叫咪", "咪咪"]);
        assert_eq!(terms("猫"), ["猫"]);
        assert_eq!(terms("I love 寿司 a lot"), ["i", "love", "寿司", "a", "lot"]);
        assert_eq!(terms("5月4日"), ["5", "月", "4", "日"]);
    }

    #[test]
    fn queries_drop_stopwords_unless_nothing_remains() {
        assert_eq!(query_terms("What is my cat's name?"), ["cat", "s", "name"]);
        assert_eq!(query_terms("what is it"), ["what", "is", "it"]);
        assert!(query_terms("  ?! ").is_empty());
    }
}
