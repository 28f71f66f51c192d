//! Whether the person asks to have something remembered ("please remember that my
//! anniversary is on June 3rd", "keep in mind that I'm diabetic", "请记住我对花生过敏").
//!
//! The labelling rules (`bench/critical/RULES.md`) call anything the person asked to be
//! remembered critical, but the probes learned the words of such a request from their other
//! use: in conversation "keep that in mind" is nearly always "I'll keep that in mind", a
//! polite close, and a request lowered the probe's reading of the fact it carries
//! ("Keep in mind that I'm diabetic." .61 against .96 for "I'm diabetic." by MiniLM's probe;
//! "请记住我对花生过敏。" .19 against .60 by e5's). None of the labelled turns asks to be
//! remembered, so the rule cannot be fitted; it is written from the rule's words and kept
//! narrow, so that what it matches is a request and not advice or a promise:
//!
//! - the request is addressed to the listener: an imperative that opens a sentence
//!   ("Remember that …", "Don't forget I …"), one with "please", "can you remember that …",
//!   "I want you to remember …", "for future reference";
//! - what is to be remembered is the person's own ("… that I / my / we / our …") or the
//!   thing just said ("… please keep that in mind."): advice to a friend ("Don't forget to
//!   take breaks", "Just remember that stumbling blocks …", "Remember, I'm always here for
//!   you") is not a request, nor is a promise ("I'll keep that in mind") or a question about
//!   the past ("Do you remember …", "Remember when we …", "你还记得我吗？").
//!
//! English is read per sentence as lowercase words and the punctuation that matters here
//! (a comma or colon right after the verb), contractions expanded; Chinese by substrings of
//! each sentence, a question (ending in 吗, or asking 还记得) excluded. Linear in the text's
//! length.

/// Sentence ends, English and Chinese.
fn is_sentence_end(c: char) -> bool {
    matches!(c, '.' | '!' | '?' | ';' | '\n' | '。' | '！' | '？' | '；' | '…')
}

/// True if the person's words ask to have something remembered.
pub(super) fn asks_to_remember(person: &str) -> bool {
    sentences(person).any(|sentence| english_request(&tokens(sentence)) || chinese_request(sentence))
}

/// The text's sentences, each with the character that ended it (if any) kept at its end.
fn sentences(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive(is_sentence_end).map(str::trim).filter(|s| !s.is_empty())
}

/// A sentence as lowercase words and the marks `,` `:` (kept as tokens), with "'" inside a
/// word, contractions expanded ("don't" → "do not", "i'm" → "i am", "i'd" → "i would"). A
/// sentence end becomes the token `?` for a question mark, `.` for any other.
fn tokens(sentence: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut Vec<String>| {
        if !word.is_empty() {
            expand(word.trim_matches('\''), out);
            word.clear();
        }
    };
    for c in sentence.chars() {
        let c = if matches!(c, '\u{2019}' | '\u{2018}') { '\'' } else { c };
        if c.is_alphanumeric() || (c == '\'' && !word.is_empty()) {
            word.extend(c.to_lowercase());
            continue;
        }
        flush(&mut word, &mut out);
        match c {
            ',' | '，' => out.push(",".into()),
            ':' | '：' => out.push(":".into()),
            '?' | '？' => out.push("?".into()),
            c if is_sentence_end(c) => out.push(".".into()),
            _ => {}
        }
    }
    flush(&mut word, &mut out);
    out
}

fn expand(word: &str, out: &mut Vec<String>) {
    let Some(at) = word.find('\'') else {
        if !word.is_empty() {
            out.push(word.to_string());
        }
        return;
    };
    let (base, suffix) = (&word[..at], &word[at + 1..]);
    let (base, second) = match suffix {
        "t" if base.ends_with('n') => {
            let stem = &base[..base.len() - 1];
            (
                match stem {
                    "wo" => "will",
                    "ca" => "can",
                    other => other,
                },
                Some("not"),
            )
        }
        "m" => (base, Some("am")),
        "re" => (base, Some("are")),
        "ll" => (base, Some("will")),
        "ve" => (base, Some("have")),
        "d" => (base, Some("would")),
        "s" if matches!(base, "it" | "that") => (base, Some("is")),
        _ => (base, None),
    };
    out.push(base.to_string());
    out.extend(second.map(str::to_string));
}

/// The verbs of a request to remember, as word sequences (`*` is "this", "that" or "it").
const REMEMBER: &[&str] = &[
    "remember",
    "do not forget",
    "never forget",
    "keep in mind",
    "keep * in mind",
    "bear in mind",
    "bear * in mind",
    "make a note of *",
    "make a note",
    "take note of *",
    "take note",
    "note * down",
    "note down",
    "note",
    "write * down",
    "save *",
];

/// What may open a sentence before its imperative.
const LEADS: &[&str] = &["oh", "also", "and", "so", "but", "ok", "okay", "hey", "just", "again", "btw", ","];

/// The words that say what is remembered is the person's own.
const SELF: &[&str] = &["i", "my", "me", "mine", "we", "our", "ours", "us"];

/// Length of `phrase` (from [`REMEMBER`] and the like) if it matches `t` at `at`.
fn phrase_at(t: &[String], at: usize, phrase: &str) -> Option<usize> {
    let mut n = 0;
    for pattern in phrase.split(' ') {
        let word = t.get(at + n)?.as_str();
        let ok = match pattern {
            "*" => matches!(word, "this" | "that" | "it"),
            p => word == p,
        };
        if !ok {
            return None;
        }
        n += 1;
    }
    Some(n)
}

/// Length of the longest remembering verb at `at`.
fn verb_at(t: &[String], at: usize) -> Option<usize> {
    REMEMBER.iter().filter_map(|p| phrase_at(t, at, p)).max()
}

fn word(t: &[String], at: usize) -> &str {
    t.get(at).map_or(".", String::as_str)
}

/// What follows the verb is the person's own: an optional "that", then I / my / we / ….
fn is_self_at(t: &[String], at: usize) -> bool {
    let at = if word(t, at) == "that" { at + 1 } else { at };
    SELF.contains(&word(t, at))
}

/// What follows the verb is the thing just said and the sentence ends: an optional
/// "this" / "that" / "it", an optional "for me", then the end.
fn is_this_at(t: &[String], at: usize) -> bool {
    let mut at = at;
    if is_object(word(t, at)) {
        at += 1;
    }
    if word(t, at) == "for" && word(t, at + 1) == "me" {
        at += 2;
    }
    is_end(word(t, at))
}

fn is_end(word: &str) -> bool {
    matches!(word, "." | "?")
}

fn is_object(word: &str) -> bool {
    matches!(word, "this" | "that" | "it")
}

/// Past what may follow "please" before its verb: a comma, an emphatic "do" (not "do not"),
/// "also".
fn after_please(t: &[String], mut at: usize) -> usize {
    loop {
        match word(t, at) {
            "," | "also" => at += 1,
            "do" if word(t, at + 1) != "not" => at += 1,
            _ => return at,
        }
    }
}

fn english_request(t: &[String]) -> bool {
    // A question is not an imperative ("Remember I had a tattoo of my four dogs?" asks
    // whether the listener remembers), except the polite "Can you remember that I …?" (4.).
    let question = t.iter().rev().find(|w| *w != ",").is_some_and(|w| w == "?");
    // 1. An imperative opening the sentence: "Remember that I …", "Please, don't forget: my …".
    let mut at = 0;
    while LEADS.contains(&word(t, at)) || (word(t, at) == "by" && word(t, at + 1) == "the" && word(t, at + 2) == "way")
    {
        at += if word(t, at) == "by" { 3 } else { 1 };
    }
    let pleased = word(t, at) == "please";
    if pleased {
        at = after_please(t, at + 1);
    }
    let opening = at;
    if let Some(n) = verb_at(t, at).filter(|_| !question) {
        let mut after = at + n;
        // "Remember, I'm always here for you" is a reassurance; with "please" a comma is a pause.
        if word(t, after) == ":" || (pleased && word(t, after) == ",") {
            after += 1;
        }
        if is_self_at(t, after) || (pleased && is_this_at(t, after)) {
            return true;
        }
    }
    for i in 0..t.len() {
        // 2. "please" before the verb anywhere: "…, please keep that in mind."
        if word(t, i) == "please" && !question {
            let at = after_please(t, i + 1);
            if let Some(n) = verb_at(t, at) {
                let mut after = at + n;
                if matches!(word(t, after), "," | ":") {
                    after += 1;
                }
                if is_self_at(t, after) || is_this_at(t, after) {
                    return true;
                }
            }
        }
        // 3. "… remember that, please.", "Keep it in mind, please."
        if let Some(n) = verb_at(t, i).filter(|_| !question) {
            let mut after = i + n;
            let mut object = t[i..after].iter().any(|w| is_object(w));
            if is_object(word(t, after)) {
                object = true;
                after += 1;
            }
            if word(t, after) == "," {
                after += 1;
            }
            if object && word(t, after) == "please" {
                return true;
            }
        }
        // 4. "Can you remember that I …?", "Could you note this for me?"
        if matches!(word(t, i), "can" | "could" | "will" | "would") && word(t, i + 1) == "you" {
            let at = if word(t, i + 2) == "please" { i + 3 } else { i + 2 };
            if let Some(n) = ["remember", "note", "keep in mind", "make a note of", "keep track of"]
                .iter()
                .find_map(|p| phrase_at(t, at, p))
                && (is_self_at(t, at + n) || is_this_at(t, at + n))
            {
                return true;
            }
        }
        // 5. "I want you to remember that my …", "I'd like you to keep in mind …"
        if word(t, i) == "i" {
            let at = match (word(t, i + 1), word(t, i + 2)) {
                ("want" | "need", _) => Some(i + 2),
                ("would", "like") => Some(i + 3),
                _ => None,
            };
            if let Some(at) = at.filter(|&at| word(t, at) == "you" && word(t, at + 1) == "to")
                && let Some(n) =
                    ["remember", "keep in mind", "note", "know"].iter().find_map(|p| phrase_at(t, at + 2, p))
                && (is_self_at(t, at + 2 + n) || is_this_at(t, at + 2 + n))
            {
                return true;
            }
        }
        // 6. "For future reference, …", "…, for future reference." (not "useful for future
        // reference")
        if (i == opening || (i > 0 && word(t, i - 1) == ","))
            && ["for future reference", "for your future reference"].iter().any(|p| phrase_at(t, i, p).is_some())
        {
            return true;
        }
    }
    false
}

/// Chinese requests: a polite or direct imperative to remember, or not to forget, the
/// person ("请记住…", "帮我记一下…", "你要记住…", "记住，我…", "别忘了我…").
const CHINESE_REQUESTS: &[&str] = &[
    "请记住",
    "请你记住",
    "请一定记住",
    "请一定要记住",
    "请你一定要记住",
    "请记得",
    "请你记得",
    "请一定记得",
    "请一定要记得",
    "请记下",
    "请你记下",
    "帮我记住",
    "帮我记下",
    "帮我记一下",
    "你要记住",
    "你一定要记住",
    "记住我",
    "记住，我",
    "记住,我",
    "记住：我",
    "记住:我",
    "别忘了我",
    "别忘记我",
    "不要忘了我",
    "不要忘记我",
];

fn chinese_request(sentence: &str) -> bool {
    let body = sentence.trim_end_matches(|c: char| is_sentence_end(c) || c.is_whitespace());
    if body.ends_with('吗') || body.ends_with('么') || body.contains("还记得") {
        return false;
    }
    CHINESE_REQUESTS.iter().any(|p| body.contains(p))
}

#[cfg(test)]
mod tests {
    use super::asks_to_remember;

    #[test]
    fn requests_to_remember_are_recognised() {
        for text in [
            "Please remember that my anniversary is on June 3rd.",
            "Remember that I am vegetarian.",
            "Don't forget I'm allergic to shellfish.",
            "Keep in mind that I'm diabetic.",
            "My daughter starts school on Monday, please keep that in mind.",
            "My birthday is May 2. Remember that, please.",
            "Please keep in mind I have two kids.",
            "Oh, and please note: my flight lands at 6.",
            "Can you remember that I'm vegetarian?",
            "Could you please note this for me?",
            "I want you to remember that my sister is visiting.",
            "I'd like you to know that I'm moving in May.",
            "For future reference, I prefer tea.",
            "I prefer tea, for future reference.",
            "Oh, for your future reference: my flat is on the 3rd floor.",
            "By the way, remember that we got married in 2019.",
            "REMEMBER THAT MY DOG IS CALLED MISO",
            "Please remember: I hate cilantro",
            "Please do remember that I work nights.",
            "Please don't forget my birthday is in May.",
            "Keep it in mind, please.",
            "Will you remember that I'm left-handed?",
            "请记住我对花生过敏。",
            "请记得我下周要出差。",
            "帮我记一下，我女儿的生日是五月二号。",
            "记住，我不吃香菜！",
            "我周五面试，别忘了我要早起。",
        ] {
            assert!(asks_to_remember(text), "{text}");
        }
    }

    #[test]
    fn advice_promises_and_questions_are_not_requests() {
        for text in [
            "Okay, I will keep that in mind. Thanks again for your help.",
            "I'll definitely keep that in mind when reaching out to the artist.",
            "Don't forget to take breaks and dance it out when you need to destress!",
            "Just remember that sometimes stumbling blocks can be opened doors.",
            "Just remember to pause, reflect, and take care of yourself.",
            "And remember, I'm always here for you.",
            "Remember, it's a process.",
            "Remember when we volunteered together last year?",
            "Remember that epic block in Game 7?",
            "Do you remember my dog's name?",
            "Can you remember what movies you recommended?",
            "I can't remember the name of that song, can you help?",
            "I remember that my friends and I got to the park around 7 pm.",
            "Please remember to be concise in your answers.",
            "I don't have any siblings.",
            "Remember I was feeling down because I couldn't get out more?",
            "Remember I had a tattoo of my four dogs?",
            "This will help me keep a record, which can be useful for future reference.",
            "Please note the weather is nice.",
            "I remember, please help me find it.",
            "Can you remember that song?",
            "你还记得我吗？",
            "你会记住我吗",
            "大致记得是醋、糖、酱油这些调料。",
            "千万别忘了带伞。",
            "",
            "please",
            "remember",
        ] {
            assert!(!asks_to_remember(text), "{text}");
        }
    }

    #[test]
    fn any_text_is_read_without_panicking() {
        let long = "please remember that ".repeat(5_000);
        assert!(asks_to_remember(&long));
        for text in ["'", "''''", "\u{2019}s", "::,,;;..", "请", "记住", "\u{0}\u{1}remember", "please,,,,"] {
            let _ = asks_to_remember(text);
        }
    }
}
