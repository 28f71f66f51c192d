//! Fuzzes the temporal parser's Chinese rules. Random bytes almost never spell 上周三 or
//! 十二月三十一日, so each byte after the four that choose the day picks a token from the
//! alphabet the rules look at (numerals in three scripts, 年月日号, relative words) or a
//! filler; libFuzzer then searches over sentences of those tokens.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "temporal_common.rs"]
mod temporal_common;

const TOKENS: &[&str] = &[
    "零", "一", "二", "三", "四", "五", "六", "七", "八", "九", "十", "两", "百", "0", "1", "2", "3", "4", "5", "9",
    "０", "１", "２", "９", "年", "月", "日", "号", "號", "天", "前", "大", "昨", "今", "晚", "几", "这", "最近", "些",
    "段时间", "上", "个", "周", "星期", "礼拜", "本", "第一次", "聊", "谈", "聊天", "对话", "见面", "我", "的", "，", " ",
    "-", "/", "May", "é", "\u{0130}", "ß", "\u{1E9E}", "𝟘", "٣", "\u{200d}",
];

fuzz_target!(|data: &[u8]| {
    if data.len() < 4 {
        return;
    }
    let today = temporal_common::today([data[0], data[1], data[2], data[3]]);
    let query: String = data[4..].iter().map(|b| TOKENS[*b as usize % TOKENS.len()]).collect();
    temporal_common::check(&query, today);
});
