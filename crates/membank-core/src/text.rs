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
    for_each_term(text, &mut String::new(), |term| out.push(term.to_owned()));
    out
}

/// [`terms`] without allocating a string per term: each term is handed to `each` in order,
/// built in `buffer` (which the caller can reuse across texts). What a cache that indexes
/// 100k memories at once calls, where a `String` per word cost more than the indexing.
pub fn for_each_term(text: &str, buffer: &mut String, mut each: impl FnMut(&str)) {
    buffer.clear();
    // A CJK run is kept as its last character: each next one makes a bigram with it.
    let mut previous_cjk: Option<char> = None;
    let mut cjk_run = 0usize;
    let mut pair = [0u8; 8];
    let flush_cjk = |previous: &mut Option<char>, run: &mut usize, each: &mut dyn FnMut(&str)| {
        if *run == 1
            && let Some(c) = *previous
        {
            each(c.encode_utf8(&mut [0u8; 4]));
        }
        *previous = None;
        *run = 0;
    };
    for c in text.chars() {
        if is_cjk(c) {
            if !buffer.is_empty() {
                each(buffer);
                buffer.clear();
            }
            if let Some(p) = previous_cjk {
                let first = p.encode_utf8(&mut pair[..4]).len();
                let mut second = [0u8; 4];
                let second = c.encode_utf8(&mut second).as_bytes();
                pair[first..first + second.len()].copy_from_slice(second);
                // Both halves are whole UTF-8 characters.
                if let Ok(bigram) = std::str::from_utf8(&pair[..first + second.len()]) {
                    each(bigram);
                }
            }
            previous_cjk = Some(c);
            cjk_run += 1;
        } else if c.is_alphanumeric() {
            flush_cjk(&mut previous_cjk, &mut cjk_run, &mut each);
            if c.is_ascii() {
                buffer.push(c.to_ascii_lowercase());
            } else {
                buffer.extend(c.to_lowercase());
            }
        } else {
            if !buffer.is_empty() {
                each(buffer);
                buffer.clear();
            }
            flush_cjk(&mut previous_cjk, &mut cjk_run, &mut each);
        }
    }
    if !buffer.is_empty() {
        each(buffer);
        buffer.clear();
    }
    flush_cjk(&mut previous_cjk, &mut cjk_run, &mut each);
}

/// The text stored in the full-text index for `text`: its terms joined by spaces.
pub fn index_text(text: &str) -> String {
    terms(text).join(" ")
}

/// English function words that carry no topic; dropped from queries (not from the index)
/// so a question's "what did I say about…" does not pull in every memory.
const STOPWORDS: &[&str] = &[
    "a", "about", "all", "am", "an", "and", "any", "are", "as", "at", "be", "been", "but", "by", "can", "could", "did",
    "do", "does", "for", "from", "had", "has", "have", "he", "her", "him", "his", "how", "i", "if", "in", "into", "is",
    "it", "its", "me", "my", "of", "on", "or", "our", "she", "so", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "to", "was", "we", "were", "what", "when", "where", "which", "who", "why", "will", "with",
    "would", "you", "your",
];

/// Chinese function characters: pronouns, particles, the copula, question words, common
/// adverbs and measure words. A CJK term (a bigram, or a lone character) made only of
/// these carries no topic: "什么", "我们", "是不", "说过", "的".
const CJK_FUNCTION_CHARS: &str =
    "的了是我你他她它们在有和就不也都吗呢吧啊呀哦嗯这那个么什怎哪谁一到说要会对把被给让从还又很太得地着过";

/// Whether a query term is a function word that carries no topic (English stopwords, and
/// CJK terms made only of Chinese function characters).
pub fn is_stopword(term: &str) -> bool {
    if STOPWORDS.contains(&term) {
        return true;
    }
    let mut chars = term.chars().peekable();
    chars.peek().is_some_and(|&c| is_cjk(c)) && chars.all(|c| CJK_FUNCTION_CHARS.contains(c))
}

/// The distinct terms of a query worth searching for, in order of first appearance:
/// stopwords dropped, so a query of nothing else ("what did I do on", once its date has
/// been taken out) has none, and the lexical search adds nothing rather than ranking by
/// "on".
pub fn query_terms(query: &str) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    terms(query).into_iter().filter(|t| !is_stopword(t) && seen.insert(t.clone())).collect()
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

    /// The allocating cutter `for_each_term` replaced, as the oracle.
    fn reference_terms(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut word = String::new();
        let mut run: Vec<char> = Vec::new();
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
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                run.push(c);
            } else if c.is_alphanumeric() {
                flush_cjk(&mut run, &mut out);
                word.extend(c.to_lowercase());
            } else {
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                flush_cjk(&mut run, &mut out);
            }
        }
        if !word.is_empty() {
            out.push(word);
        }
        flush_cjk(&mut run, &mut out);
        out
    }

    #[test]
    fn the_streaming_cutter_equals_the_reference_on_mixed_text() {
        let texts = [
            "",
            " ",
            "a",
            "猫",
            "我的猫叫咪咪",
            "ab中文cd",
            "中,文",
            "中 x 文字",
            "İstanbul ǅemal STRASSE ß",
            "東京タワーに行きました。とても綺麗でした！",
            "오늘 날씨가 정말 좋네요",
            "x\u{200b}y 𠀀𠀁z",
            "5月4日 we met at 14:30",
            "ÅNGSTRÖM café—déjà vu 🍕🐶",
            "😀中😀文😀",
            "a1b2 C3D4 ΣΊΣΥΦΟΣ",
        ];
        let mut buffer = String::from("leftover");
        for text in texts {
            let mut got = Vec::new();
            for_each_term(text, &mut buffer, |t| got.push(t.to_owned()));
            assert_eq!(got, reference_terms(text), "{text:?}");
            assert_eq!(terms(text), reference_terms(text), "{text:?}");
        }
        // Every character class in turn, in a pseudo-random order.
        let alphabet: Vec<char> = "aZ9 ,中文字İß😀\u{3000}ｱ한-".chars().collect();
        let mut x = 7u64;
        for _ in 0..500 {
            let text: String = (0..12)
                .map(|_| {
                    x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
                    alphabet[(x >> 33) as usize % alphabet.len()]
                })
                .collect();
            assert_eq!(terms(&text), reference_terms(&text), "{text:?}");
        }
    }

    #[test]
    fn queries_drop_stopwords_even_when_nothing_remains() {
        assert_eq!(query_terms("What is my cat's name?"), ["cat", "s", "name"]);
        // Once "May 4th" is taken out as the date, nothing is left to search words for.
        assert!(query_terms("what did I do on").is_empty());
        assert!(query_terms("what is it").is_empty());
        assert!(query_terms("  ?! ").is_empty());
        assert_eq!(query_terms("cat cat CAT"), ["cat"]);
    }

    #[test]
    fn chinese_function_terms_are_stopwords_and_topics_are_not() {
        // 我之前说过我喜欢什么？ — "I said before what I like?"
        let kept = query_terms("我之前说过我喜欢什么？");
        for gone in ["说过", "过我", "什么"] {
            assert!(!kept.contains(&gone.to_string()), "{gone} in {kept:?}");
        }
        for topic in ["之前", "喜欢"] {
            assert!(kept.contains(&topic.to_string()), "{topic} not in {kept:?}");
        }
        assert!(is_stopword("的") && is_stopword("我们") && !is_stopword("猫"));
        assert!(query_terms("我的猫叫什么").contains(&"的猫".to_string()));
        // English and CJK rules do not leak into each other.
        assert!(!is_stopword("whatever") && !is_stopword("喜欢"));
    }
}
