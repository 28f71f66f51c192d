//! The estimator's weights: each cue's share of the logit, and the bounds of the estimate.

/// Logit weight of a first-person statement ("i" + a verb that is not a hedge, "my X",
/// "our X", "we …"; in Chinese "我" as a subject): +1.0.
pub(super) const SELF_DISCLOSURE: f64 = 1.0;
/// Extra logit weight of identity phrasing ("i am a", "i work", "i live", "my name",
/// "called", "named", "years old", "我是", "叫", "住在"): +0.6.
pub(super) const IDENTITY: f64 = 0.6;
/// Logit weight of a preference ("i like/love/hate/prefer", "favorite", "allergic",
/// "vegetarian", "我喜欢", "讨厌", "过敏"): +1.0.
pub(super) const PREFERENCE: f64 = 1.0;
/// Logit weight of a plan, commitment or routine ("i will", "i'm going to",
/// "planning", "decided", "next week", "tomorrow", "every", "打算", "计划", "明天"): +0.9.
pub(super) const PLAN: f64 = 0.9;
/// Logit weight of a named entity: an English word capitalised where a sentence does
/// not start, or a Chinese 《title》: +0.6.
pub(super) const NAMED_ENTITY: f64 = 0.6;
/// Logit weight of a number (digits, "two" … "thousand", Chinese numeral + unit): +0.5.
pub(super) const NUMBER: f64 = 0.5;
/// Logit weight of a date or time (month and weekday names, "3rd", "9am", "yesterday",
/// "ago", "birthday", "10月5日", "上周"): +0.8.
pub(super) const DATE_OR_TIME: f64 = 0.8;
/// Logit weight of a health, relationship, work/school or money word ("surgery", "wife",
/// "promoted", "rent", "医院", "老公", "面试", "房租"): +0.7.
pub(super) const LIFE_TOPIC: f64 = 0.7;
/// Logit weight per unit of filler share: the fraction of the words (or Chinese
/// characters) that are greetings, thanks, farewells or filler ("hi", "thanks", "ok",
/// "good morning", "你好", "谢谢", "再见"). All filler gives −2.0.
pub(super) const FILLER_SHARE: f64 = -2.0;
/// Logit weight of a word about the passing moment ("today", "now", "earlier", "brb",
/// "breakfast", "今天", "现在", "刚"): −0.7. "I'm going to grab a coffee now" is a plan
/// and a first-person statement, but not one worth weeks.
pub(super) const MOMENTARY: f64 = -0.7;
/// Logit weight of a text of at most two words (a Chinese word counted as two
/// characters): −0.8.
pub(super) const VERY_SHORT: f64 = -0.8;
/// Logit weight of a text of three or four words: −0.4.
pub(super) const SHORT: f64 = -0.4;
/// Logit weight of a question or request to the assistant that has no first-person
/// statement in it ("what's the capital of …?", "tell me a joke", "你叫什么名字"): −1.0.
/// Such a text's positive cues are also halved, since names and numbers in a trivia
/// question are about the world, not the person.
pub(super) const QUESTION_WITHOUT_DISCLOSURE: f64 = -1.0;
/// Factor on the positive cues of a question or request without self-disclosure.
pub(super) const QUESTION_DAMPING: f64 = 0.5;
/// Factor on the logit of a turn in which only the assistant spoke: its words are not
/// the person's, so they move the estimate only half as far.
pub(super) const ASSISTANT_ONLY_DAMPING: f64 = 0.5;
/// Lowest and (by symmetry) 1 − highest importance the estimator returns.
pub(super) const FLOOR: f64 = 0.05;
