//! English cues: the text read as words (contractions expanded, so "I'm" is "i am").

use super::counts::Evidence;
use crate::text::is_cjk;

/// One lowercase word, with what capitalisation tells about it.
#[derive(Debug)]
pub(super) struct Word {
    text: String,
    capitalised: bool,
    sentence_start: bool,
}

/// Abbreviations whose full stop does not end a sentence, so "Dr. Okafor" keeps its name.
const ABBREVIATIONS: &[&str] = &["dr", "mr", "mrs", "ms", "st", "prof", "jr", "sr", "mt"];

/// Splits text into lowercase words: letters and digits of non-CJK scripts, with
/// apostrophes inside words, contractions expanded ("i'm" → "i am", "don't" → "do not",
/// "mom's" → "mom").
pub(super) fn words(text: &str) -> Vec<Word> {
    let mut out = Vec::new();
    let mut raw = String::new();
    let mut raw_starts_sentence = true;
    let mut at_sentence_start = true;
    for c in text.chars() {
        let c = if matches!(c, '\u{2019}' | '\u{2018}') { '\'' } else { c };
        if (c.is_alphanumeric() && !is_cjk(c)) || (c == '\'' && !raw.is_empty()) {
            if raw.is_empty() {
                raw_starts_sentence = at_sentence_start;
            }
            raw.push(c);
            continue;
        }
        let mut after_abbreviation = false;
        if !raw.is_empty() {
            push_word(&mut out, &raw, raw_starts_sentence);
            after_abbreviation = ABBREVIATIONS.iter().any(|a| raw.eq_ignore_ascii_case(a));
            raw.clear();
            at_sentence_start = false;
        }
        let ends_sentence =
            matches!(c, '!' | '?' | '\n' | '。' | '！' | '？' | '…') || (c == '.' && !after_abbreviation);
        if ends_sentence {
            at_sentence_start = true;
        }
    }
    if !raw.is_empty() {
        push_word(&mut out, &raw, raw_starts_sentence);
    }
    out
}

fn push_word(out: &mut Vec<Word>, raw: &str, sentence_start: bool) {
    let raw = raw.trim_matches('\'');
    if raw.is_empty() {
        return;
    }
    let capitalised = raw.chars().next().is_some_and(char::is_uppercase);
    let lower = raw.to_lowercase();
    let mut push = |text: &str, first: bool| {
        out.push(Word {
            text: text.to_string(),
            capitalised: capitalised && first,
            sentence_start: sentence_start && first,
        });
    };
    let Some(apostrophe) = lower.find('\'') else {
        push(&lower, true);
        return;
    };
    let (base, suffix) = (&lower[..apostrophe], &lower[apostrophe + 1..]);
    match suffix {
        _ if lower == "o'clock" => push(&lower, true),
        "t" if base.ends_with('n') => {
            // "don't" → "do not", "can't" → "ca not" → "can not", "won't" → "will not".
            let stem = &base[..base.len() - 1];
            let stem = match stem {
                "wo" => "will",
                "ca" => "can",
                "sha" => "shall",
                other => other,
            };
            push(stem, true);
            push("not", false);
        }
        "m" => {
            push(base, true);
            push("am", false);
        }
        "re" => {
            push(base, true);
            push("are", false);
        }
        "ll" => {
            push(base, true);
            push("will", false);
        }
        "ve" => {
            push(base, true);
            push("have", false);
        }
        "d" => {
            push(base, true);
            push("would", false);
        }
        "s" if matches!(base, "it" | "that" | "what" | "he" | "she" | "there" | "here" | "who" | "how" | "where") => {
            push(base, true);
            push("is", false);
        }
        // A possessive ("mom's") or anything else: the stem carries the meaning.
        _ => push(base, true),
    }
}

/// True if `pattern` matches `word`; a trailing `*` matches any ending.
fn word_matches(pattern: &str, word: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => word.starts_with(prefix),
        None => word == pattern,
    }
}

/// Length in words of `phrase` if it matches at `at`.
fn phrase_at(words: &[Word], at: usize, phrase: &str) -> Option<usize> {
    let mut length = 0;
    for pattern in phrase.split(' ') {
        let word = words.get(at + length)?;
        if !word_matches(pattern, &word.text) {
            return None;
        }
        length += 1;
    }
    Some(length)
}

fn any_phrase_at(words: &[Word], at: usize, phrases: &[&str]) -> bool {
    phrases.iter().any(|phrase| phrase_at(words, at, phrase).is_some())
}

fn is_one_of(word: &str, patterns: &[&str]) -> bool {
    patterns.iter().any(|pattern| word_matches(pattern, word))
}

/// Words that, right after "i", make the sentence a hedge rather than a statement.
const HEDGES: &[&str] =
    &["think", "guess", "mean", "know", "see", "wonder*", "suppose", "agree", "dunno", "care", "mind"];
/// Words skipped between "i" and its verb ("i really love", "i don't know").
const ADVERBS: &[&str] =
    &["do", "did", "not", "really", "just", "also", "actually", "honestly", "still", "so", "kinda", "too", "only"];
/// Modal verbs skipped before checking for a hedge ("i'll think about it").
const MODALS: &[&str] = &["will", "would", "can", "could", "might", "may", "should", "must"];
/// Requests phrased in the first person: asking for something, not telling.
const REQUEST_PHRASES: &[&str] = &[
    "i would like a",
    "i would like an",
    "i would like some",
    "i would like the",
    "i would like to know",
    "i would love a",
    "i need a",
    "i need an",
    "i need some",
    "i need help",
    "i want a",
    "i want an",
    "i want some",
    "i am looking for a",
];
/// States after "i am" that are small talk, not disclosure ("i'm fine", "i'm back").
const SMALL_TALK_STATES: &[&str] = &[
    "fine",
    "good",
    "ok",
    "okay",
    "alright",
    "back",
    "here",
    "bored",
    "sure",
    "glad",
    "great",
    "well",
    "doing",
    "sorry",
    "chilling",
    "home",
    "busy",
    "tired",
    "exhausted",
    "sleepy",
    "hungry",
    "wondering",
    "curious",
    "kidding",
    "joking",
];
/// Words before a first-person pronoun that make it a question ("should i", "can we").
const INVERTING_AUXILIARIES: &[&str] = &[
    "should", "can", "could", "do", "does", "did", "shall", "would", "will", "am", "are", "is", "may", "might", "must",
];
/// Words after "my" that make an exclamation, not a possession ("oh my god").
const NOT_POSSESSIONS: &[&str] = &["god", "gosh", "goodness", "bad", "pleasure", "word", "lord"];

/// "i"/"we" as the subject of a statement, or "my"/"our" before a noun.
fn is_self_statement(words: &[Word], at: usize) -> bool {
    let word = words[at].text.as_str();
    let next = |offset: usize| words.get(at + offset).map(|w| w.text.as_str());
    match word {
        "my" | "our" => next(1).is_some_and(|n| !NOT_POSSESSIONS.contains(&n)),
        "i" | "we" => {
            if at > 0 && INVERTING_AUXILIARIES.contains(&words[at - 1].text.as_str()) {
                return false;
            }
            if any_phrase_at(words, at, REQUEST_PHRASES) {
                return false;
            }
            let mut offset = 1;
            while next(offset).is_some_and(|n| ADVERBS.contains(&n) || MODALS.contains(&n)) {
                offset += 1;
            }
            match next(offset) {
                None => false,
                Some(verb) if is_one_of(verb, HEDGES) => false,
                Some("am" | "are" | "was" | "were") => {
                    offset += 1;
                    while next(offset).is_some_and(|n| ADVERBS.contains(&n)) {
                        offset += 1;
                    }
                    next(offset).is_some_and(|state| !SMALL_TALK_STATES.contains(&state))
                }
                Some(_) => true,
            }
        }
        _ => false,
    }
}

/// Identity phrasing, matched at any word.
const IDENTITY_PHRASES: &[&str] = &[
    "i am a",
    "i am an",
    "i am from",
    "i am originally",
    "i work*",
    "i live*",
    "i grew up",
    "i was born",
    "my name",
    "call me",
    "years old",
    "i study",
    "i teach*",
    "i speak*",
    "called",
    "named",
    "i moved",
];

/// Preference verbs: they count only with the person (or someone close) as subject.
const PREFERENCE_VERBS: &[&str] =
    &["like", "likes", "love", "loves", "loved", "hate", "hates", "hated", "enjoy*", "dislike*", "adore*"];
/// Preference words that count wherever they stand.
const PREFERENCE_WORDS: &[&str] = &[
    "prefer*",
    "favorite*",
    "favourite*",
    "allergic",
    "vegetarian",
    "vegan",
    "intolerant",
    "celiac",
    "gluten",
    "halal",
    "kosher",
];
/// Subjects of a preference verb that make it a stated preference.
const PREFERENCE_SUBJECTS: &[&str] = &["i", "we", "my", "our", "he", "she", "they"];

fn is_preference(words: &[Word], at: usize) -> bool {
    let word = words[at].text.as_str();
    if is_one_of(word, PREFERENCE_WORDS) || phrase_at(words, at, "can not stand").is_some() {
        return true;
    }
    if !is_one_of(word, PREFERENCE_VERBS) {
        return false;
    }
    // "would like" is a request and "do you like" a question; "i really love" and
    // "my son loves" are preferences.
    let before = &words[at.saturating_sub(3)..at];
    let previous = before.last().map(|w| w.text.as_str());
    previous != Some("would")
        && !before.iter().any(|w| w.text == "you")
        && before.iter().any(|w| PREFERENCE_SUBJECTS.contains(&w.text.as_str()))
}

/// Plans, commitments and routines, matched at any word.
const PLAN_PHRASES: &[&str] = &[
    "i will",
    "we will",
    "i am going to",
    "we are going to",
    "i am gonna",
    "plan*",
    "decided",
    "decide",
    "intend*",
    "i want to",
    "we want to",
    "i hope to",
    "thinking of",
    "thinking about",
    "goal*",
    "schedul*",
    "appointment*",
    "deadline*",
    "due",
    "tomorrow",
    "tonight",
    "next week*",
    "next month",
    "next year",
    "next summer",
    "next winter",
    "next spring",
    "next fall",
    "soon",
    "every",
    "usually",
    "always",
    "twice",
    "daily",
    "weekly",
    "monthly",
    "about to",
    "trying to",
    "start",
    "starts",
    "starting",
    "going back",
    "training",
    "saving*",
];

/// A plan phrase; one that starts with "i" or "we" counts only if it is a statement, so
/// "i'll think about it" is no plan.
fn is_plan(words: &[Word], at: usize) -> bool {
    PLAN_PHRASES.iter().any(|phrase| {
        phrase_at(words, at, phrase).is_some()
            && (!(phrase.starts_with("i ") || phrase.starts_with("we ")) || is_self_statement(words, at))
    })
}

/// The passing moment.
const MOMENTARY_WORDS: &[&str] = &[
    "today",
    "now",
    "earlier",
    "brb",
    "breakfast",
    "lunch",
    "dinner",
    "this morning",
    "this afternoon",
    "this evening",
];

const MONTHS: &[&str] = &[
    "january",
    "february",
    "march",
    "april",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
    "jan",
    "feb",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
];
const WEEKDAYS: &[&str] = &["monday*", "tuesday*", "wednesday*", "thursday*", "friday*", "saturday*", "sunday*"];
const DATE_WORDS: &[&str] = &[
    "yesterday",
    "ago",
    "birthday*",
    "anniversar*",
    "weekend*",
    "christmas",
    "thanksgiving",
    "easter",
    "holiday*",
    "o'clock",
    "last week",
    "last month",
    "last year",
    "last night",
    "last summer",
    "last winter",
    "last spring",
    "last fall",
    "am",
    "pm",
];

fn has_digit(word: &str) -> bool {
    word.bytes().any(|b| b.is_ascii_digit())
}

/// "3rd", "22nd", "9am", "11pm": digits with an ordinal or clock suffix.
fn is_ordinal_or_clock(word: &str) -> bool {
    let digits = word.bytes().take_while(u8::is_ascii_digit).count();
    digits > 0 && matches!(&word[digits..], "st" | "nd" | "rd" | "th" | "am" | "pm")
}

fn is_date_or_time(words: &[Word], at: usize) -> bool {
    let word = words[at].text.as_str();
    let digit_neighbour =
        || (at > 0 && has_digit(&words[at - 1].text)) || words.get(at + 1).is_some_and(|w| has_digit(&w.text));
    match word {
        // "may" is a month only next to a number; "am"/"pm" only after one.
        "may" => digit_neighbour(),
        "am" | "pm" => at > 0 && has_digit(&words[at - 1].text),
        _ => {
            is_one_of(word, MONTHS)
                || is_one_of(word, WEEKDAYS)
                || is_ordinal_or_clock(word)
                || DATE_WORDS
                    .iter()
                    .any(|phrase| !matches!(*phrase, "am" | "pm") && phrase_at(words, at, phrase).is_some())
        }
    }
}

const NUMBER_WORDS: &[&str] = &[
    "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "twenty", "thirty",
    "forty", "fifty", "sixty", "seventy", "eighty", "ninety", "hundred", "thousand", "million", "dozen",
];

/// Health, relationships, work and school, money.
const LIFE_TOPICS: &[&str] = &[
    // Health.
    "doctor*",
    "dr",
    "hospital*",
    "surger*",
    "diagnos*",
    "allerg*",
    "medic*",
    "meds",
    "pill*",
    "therap*",
    "pregnan*",
    "diabet*",
    "anxiety",
    "anxious",
    "depress*",
    "pain",
    "sick",
    "illness",
    "injur*",
    "broke",
    "broken",
    "dentist*",
    "pediatric*",
    "clinic*",
    "cancer",
    "asthma",
    "migraine*",
    "insomnia",
    "diet",
    "smok*",
    "alcohol",
    "sober",
    "marathon",
    "wheelchair",
    "disab*",
    "dementia",
    "blood",
    // Relationships.
    "wife",
    "husband",
    "partner*",
    "boyfriend",
    "girlfriend",
    "fianc*",
    "son",
    "sons",
    "daughter*",
    "kid",
    "kids",
    "child",
    "children",
    "baby",
    "mom",
    "moms",
    "mum",
    "mother*",
    "dad",
    "dads",
    "father*",
    "parent*",
    "sister*",
    "brother*",
    "sibling*",
    "grandma*",
    "grandmother*",
    "grandpa*",
    "grandfather*",
    "grandparent*",
    "aunt*",
    "uncle*",
    "cousin*",
    "niece*",
    "nephew*",
    "friend*",
    "family",
    "marri*",
    "divorc*",
    "wedding*",
    "engaged",
    "propos*",
    "dating",
    "breakup",
    "dog",
    "dogs",
    "cat",
    "cats",
    "pet",
    "pets",
    "puppy",
    "kitten",
    "roommate*",
    // Work and school.
    "job*",
    "work*",
    "boss*",
    "manager*",
    "colleague*",
    "coworker*",
    "promot*",
    "career*",
    "interview*",
    "office",
    "shift*",
    "hired",
    "fired",
    "quit",
    "resign*",
    "retir*",
    "school*",
    "college*",
    "universit*",
    "class",
    "classes",
    "exam*",
    "degree",
    "graduat*",
    "student*",
    "teach*",
    "nurse*",
    "engineer*",
    "offer",
    "company",
    "business",
    "client*",
    "intern*",
    // Money.
    "rent",
    "mortgage*",
    "debt*",
    "owe*",
    "loan*",
    "paid",
    "pay",
    "paycheck",
    "salary",
    "budget*",
    "bank*",
    "money",
    "dollar*",
    "euro*",
    "invest*",
    "afford*",
    "bill*",
    "tax*",
    "insurance",
];

/// Greetings, thanks, farewells and filler, as single words or phrases.
const FILLER: &[&str] = &[
    "hi",
    "hello",
    "hey",
    "hiya",
    "heya",
    "yo",
    "howdy",
    "thanks",
    "thank you",
    "thank",
    "thx",
    "ty",
    "ok",
    "okay",
    "okey",
    "k",
    "kk",
    "bye",
    "goodbye",
    "cool",
    "nice",
    "lol",
    "lmao",
    "rofl",
    "haha*",
    "hehe*",
    "hmm*",
    "hm",
    "ah",
    "oh",
    "ooh",
    "wow",
    "yeah",
    "yea",
    "yep",
    "yup",
    "yes",
    "no",
    "nope",
    "nah",
    "sure",
    "whatever",
    "anyway*",
    "great",
    "awesome",
    "alright",
    "fine",
    "same",
    "please",
    "welcome",
    "later",
    "cheers",
    "good morning",
    "good night",
    "good evening",
    "good afternoon",
    "see you",
    "see ya",
    "sounds good",
    "got it",
    "how are you",
    "how is it going",
    "what is up",
    "not much",
    "you are the best",
    "no problem",
    "take care",
    "me too",
    "merry christmas",
    "happy holidays",
    "happy new year",
    "happy birthday",
    "happy easter",
    "happy thanksgiving",
    "happy monday",
    "happy friday",
    "happy weekend",
];

/// First words of a question or a request to the assistant.
const QUESTION_OPENERS: &[&str] = &[
    "what",
    "how",
    "who",
    "where",
    "when",
    "why",
    "which",
    "can",
    "could",
    "would",
    "will",
    "is",
    "are",
    "do",
    "does",
    "did",
    "should",
    "shall",
    "tell",
    "explain",
    "write",
    "translate",
    "recommend",
    "summarize",
    "summarise",
    "give",
    "show",
    "help",
    "define",
    "list",
    "describe",
    "suggest",
];

fn is_named_entity(word: &Word) -> bool {
    word.capitalised
        && !word.sentence_start
        && word.text.chars().count() >= 2
        && !is_one_of(&word.text, MONTHS)
        && !is_one_of(&word.text, WEEKDAYS)
        && !is_one_of(&word.text, FILLER)
}

pub(super) fn english_cues(words: &[Word], evidence: &mut Evidence) {
    let mut filler_until = 0;
    for (at, word) in words.iter().enumerate() {
        let count = |hit: bool, counter: &mut u32| *counter += u32::from(hit);
        count(is_self_statement(words, at), &mut evidence.self_disclosure);
        count(any_phrase_at(words, at, IDENTITY_PHRASES), &mut evidence.identity);
        count(is_preference(words, at), &mut evidence.preference);
        count(is_plan(words, at), &mut evidence.plan);
        count(any_phrase_at(words, at, MOMENTARY_WORDS), &mut evidence.momentary);
        evidence.question_or_request |= any_phrase_at(words, at, REQUEST_PHRASES);
        count(is_named_entity(word), &mut evidence.named_entity);
        count(has_digit(&word.text) || NUMBER_WORDS.contains(&word.text.as_str()), &mut evidence.number);
        count(is_date_or_time(words, at), &mut evidence.date_or_time);
        count(is_one_of(&word.text, LIFE_TOPICS), &mut evidence.life_topic);
        // Phrases may overlap ("thank you" and "thank"); each word is filler at most once.
        if let Some(length) = FILLER.iter().filter_map(|phrase| phrase_at(words, at, phrase)).max() {
            let end = at + length;
            evidence.filler_units += end - at.max(filler_until).min(end);
            filler_until = filler_until.max(end);
        }
    }
    if let Some(first) = words.first() {
        evidence.question_or_request |= first.sentence_start && QUESTION_OPENERS.contains(&first.text.as_str());
    }
}
