//! Which writing system a text is mostly in: Latin script, or another one (Han, Kana,
//! Hangul, Cyrillic, Arabic, …). The CLI picks a new store's embedding model by it, and
//! the engine and `membank check` use it to say when a store's English-only model is given
//! text it cannot read.
//!
//! It counts *units* of text, so that a Chinese sentence and an English one of the same
//! length in meaning weigh about the same: in scripts written without spaces between words
//! (Han, Hiragana, Katakana, Hangul syllables, Thai, Lao, Khmer, Myanmar, Tibetan) each
//! letter is a unit; elsewhere each word (a run of letters of one script) is a unit.
//! Digits, punctuation, symbols and emoji count for nothing, and neither does a
//! whitespace-separated token that is a URL (`://`, `www.`) or an e-mail address: they say
//! nothing about the language a person writes in. A text is [`Writing::Other`] when at
//! least half its units are of scripts other than Latin (ties go to the multilingual
//! model, which reads English too), [`Writing::Latin`] when fewer are, and
//! [`Writing::Unknown`] when it has no unit at all (empty, only digits, punctuation or
//! emoji).
//!
//! What it cannot do: tell languages of one script apart. French, German, Spanish,
//! Vietnamese or Indonesian are Latin script like English, so they read as `Latin`; a
//! person writing them must choose a multilingual model by name. It never reads a
//! dictionary and does no I/O.

/// A tally of a text's units by script.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ScriptTally {
    /// Latin-script words (English, French, Vietnamese, …), full-width Latin included.
    pub latin: usize,
    /// Units of every other script: a letter of Han, Kana, Hangul, Thai and the other
    /// scripts written without spaces, a word of Cyrillic, Greek, Arabic, Hebrew,
    /// Devanagari and the rest.
    pub other: usize,
}

/// What a tally says about the writing system.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Writing {
    /// Fewer than half the units are of a script other than Latin.
    Latin,
    /// At least half the units are of scripts other than Latin.
    Other,
    /// No letter at all (empty, digits, punctuation, emoji, URLs).
    Unknown,
}

/// How one letter counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Letter {
    Latin,
    /// A script with spaces between words: a run of its letters is one unit.
    OtherWord,
    /// A script without spaces between words: each letter is a unit.
    OtherUnspaced,
}

fn letter(c: char) -> Option<Letter> {
    if !c.is_alphabetic() {
        return None;
    }
    let code = c as u32;
    let latin = matches!(code,
        0x0041..=0x024F      // Basic Latin letters, Latin-1 Supplement, Latin Extended-A and -B
        | 0x0250..=0x02AF    // IPA extensions
        | 0x1D00..=0x1DBF    // phonetic extensions
        | 0x1E00..=0x1EFF    // Latin Extended Additional (Vietnamese)
        | 0x2C60..=0x2C7F    // Latin Extended-C
        | 0xA720..=0xA7FF    // Latin Extended-D
        | 0xAB30..=0xAB6F    // Latin Extended-E
        | 0xFB00..=0xFB06    // Latin ligatures
        | 0xFF21..=0xFF3A    // full-width A–Z
        | 0xFF41..=0xFF5A    // full-width a–z
    );
    if latin {
        return Some(Letter::Latin);
    }
    let unspaced = crate::text::is_cjk(c)
        || matches!(code,
            0x0E00..=0x0EFF      // Thai, Lao
            | 0x0F00..=0x0FFF    // Tibetan
            | 0x1000..=0x109F    // Myanmar
            | 0x1780..=0x17FF    // Khmer
            | 0x1100..=0x11FF    // Hangul Jamo
            | 0x3130..=0x318F    // Hangul compatibility Jamo
            | 0x3005..=0x3007    // 々 〆 〇
            | 0x31F0..=0x31FF    // Katakana phonetic extensions
            | 0xFF66..=0xFF9F    // half-width Katakana
        );
    Some(if unspaced { Letter::OtherUnspaced } else { Letter::OtherWord })
}

/// A whitespace-separated token that names a place rather than says something.
fn is_address(token: &str) -> bool {
    let lower = token.to_ascii_lowercase();
    lower.contains("://") || lower.starts_with("www.") || (token.contains('@') && token.contains('.'))
}

impl ScriptTally {
    /// Counts one text.
    pub fn of(text: &str) -> Self {
        let mut tally = Self::default();
        for token in text.split_whitespace() {
            if is_address(token) {
                continue;
            }
            let mut word: Option<Letter> = None;
            for c in token.chars() {
                match letter(c) {
                    Some(Letter::OtherUnspaced) => {
                        tally.other += 1;
                        word = None;
                    }
                    Some(kind) => {
                        if word != Some(kind) {
                            match kind {
                                Letter::Latin => tally.latin += 1,
                                _ => tally.other += 1,
                            }
                            word = Some(kind);
                        }
                    }
                    // Combining marks (accents, vowel signs) continue the word they sit in.
                    None if is_mark(c) => {}
                    None => word = None,
                }
            }
        }
        tally
    }

    /// Counts several texts together, as one body of writing.
    pub fn of_all<'a>(texts: impl IntoIterator<Item = &'a str>) -> Self {
        texts.into_iter().fold(Self::default(), |sum, text| sum + Self::of(text))
    }

    /// Units in all.
    pub fn total(&self) -> usize {
        self.latin + self.other
    }

    /// The writing system: [`Writing::Other`] when at least half the units are of scripts
    /// other than Latin.
    pub fn writing(&self) -> Writing {
        if self.total() == 0 {
            Writing::Unknown
        } else if self.other * 2 >= self.total() {
            Writing::Other
        } else {
            Writing::Latin
        }
    }
}

impl std::ops::Add for ScriptTally {
    type Output = Self;
    fn add(self, rhs: Self) -> Self {
        Self { latin: self.latin + rhs.latin, other: self.other + rhs.other }
    }
}

/// Combining marks: not letters, but part of the letter before them.
fn is_mark(c: char) -> bool {
    matches!(c as u32, 0x0300..=0x036F | 0x0483..=0x0489 | 0x0591..=0x05C7 | 0x0610..=0x061A | 0x064B..=0x065F | 0x0900..=0x0903 | 0x093A..=0x094F | 0x0951..=0x0957 | 0x0962..=0x0963 | 0x1AB0..=0x1AFF | 0x1DC0..=0x1DFF | 0x20D0..=0x20FF | 0xFE20..=0xFE2F)
}

/// The writing system of `text` (see the module documentation for the rule).
pub fn writing_of(text: &str) -> Writing {
    ScriptTally::of(text).writing()
}

/// The writing system of several texts taken together (a batch of memories).
pub fn writing_of_all<'a>(texts: impl IntoIterator<Item = &'a str>) -> Writing {
    ScriptTally::of_all(texts).writing()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, latin: usize, other: usize, writing: Writing) {
        let tally = ScriptTally::of(text);
        assert_eq!((tally.latin, tally.other), (latin, other), "{text:?}");
        assert_eq!(tally.writing(), writing, "{text:?}");
    }

    #[test]
    fn each_script_counts_in_its_own_units() {
        check("I adopted a grey cat named Miso", 7, 0, Writing::Latin);
        check("我的猫叫咪咪", 0, 6, Writing::Other);
        check("昨日は寿司を食べました", 0, 11, Writing::Other);
        check("カタカナだけ", 0, 6, Writing::Other);
        check("나는 고양이를 좋아해요", 0, 10, Writing::Other);
        check("Я люблю своего кота", 0, 4, Writing::Other);
        check("أنا أحب قطتي", 0, 3, Writing::Other);
        check("मुझे बिल्लियाँ पसंद हैं", 0, 4, Writing::Other);
        check("ฉันรักแมว", 0, 9, Writing::Other);
        check("Ελληνικά κείμενα", 0, 2, Writing::Other);
    }

    #[test]
    fn latin_languages_other_than_english_are_latin() {
        // Script alone cannot tell them from English: they need the model named.
        check("J'ai adopté un chat gris qui s'appelle Miso", 10, 0, Writing::Latin);
        check("Tôi đã nhận nuôi một con mèo", 7, 0, Writing::Latin);
        check("Ｆｕｌｌ ｗｉｄｔｈ", 2, 0, Writing::Latin);
    }

    #[test]
    fn mixed_text_goes_by_the_majority_and_ties_go_to_other() {
        check("我今天用Python写了一个web server", 3, 8, Writing::Other);
        check("I had 寿司 for lunch with my friends today", 8, 2, Writing::Latin);
        check("I met 王小明 today", 3, 3, Writing::Other);
        check("User: 好\nAssistant: 好的", 2, 3, Writing::Other);
        check("User: I love sushi\nAssistant: 我也是", 5, 3, Writing::Latin);
    }

    #[test]
    fn nothing_to_read_is_unknown() {
        check("", 0, 0, Writing::Unknown);
        check("   \n\t ", 0, 0, Writing::Unknown);
        check("!!! ??? ... 。，、", 0, 0, Writing::Unknown);
        check("😀🐱👍 🎉", 0, 0, Writing::Unknown);
        check("12345 3.14 2024-05-04 +86 138 0000 0000", 0, 0, Writing::Unknown);
        check("https://example.com/a/b?q=cat www.example.org me@example.com", 0, 0, Writing::Unknown);
    }

    #[test]
    fn urls_and_digits_do_not_outvote_the_words() {
        check("看看这个 https://example.com/some/long/english/path 很有意思", 0, 8, Writing::Other);
        check("我的电话是 138 0000 0000", 0, 5, Writing::Other);
        check("see https://例子.中国/路径", 1, 0, Writing::Latin);
    }

    #[test]
    fn combining_marks_stay_inside_their_word() {
        // "é" written as e + U+0301 is still one word.
        check("cafe\u{301} noir", 2, 0, Writing::Latin);
    }

    #[test]
    fn batches_are_counted_as_one_body_of_writing() {
        let texts = ["我的猫叫咪咪", "I like it", "今天下雨了"];
        let tally = ScriptTally::of_all(texts);
        assert_eq!((tally.latin, tally.other), (3, 11));
        assert_eq!(writing_of_all(texts), Writing::Other);
        assert_eq!(writing_of_all(["hello there", "你"]), Writing::Latin);
        assert_eq!(writing_of_all(Vec::<&str>::new()), Writing::Unknown);
    }
}
