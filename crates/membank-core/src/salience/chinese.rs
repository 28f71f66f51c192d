//! Chinese cues: substrings over the characters, since Chinese has no spaces.

use super::counts::Evidence;
use crate::text::is_cjk;

/// Characters before "我" that make it an object, not a subject ("帮我", "给我讲").
const CN_NOT_SUBJECT_BEFORE: &[char] = &['帮', '给', '让', '陪', '跟', '教', '诉', '叫'];
/// What follows "我" in a hedge rather than a statement ("我觉得", "我不知道").
const CN_HEDGES: &[&str] = &[
    "觉得",
    "不知道",
    "也不知道",
    "想想",
    "看看",
    "还好",
    "没事",
    "知道了",
    "明白",
    "懂了",
    "也是",
    "挺好",
    "回来",
    "来了",
    "想听",
    "想看",
    "想问",
    "好困",
    "好累",
    "有点困",
    "有点累",
    "困了",
    "累了",
    "饿了",
    "今天好困",
    "今天好累",
];
/// The passing moment, in Chinese.
const CN_MOMENTARY: &[&str] = &["今天", "现在", "刚", "早饭", "午饭", "晚饭", "早餐", "午餐", "晚餐"];
const CN_IDENTITY: &[&str] = &["我是", "名字", "住在", "来自", "老家"];
const CN_PREFERENCE: &[&str] = &[
    "喜欢",
    "爱吃",
    "爱喝",
    "爱看",
    "爱听",
    "爱好",
    "热爱",
    "最爱",
    "讨厌",
    "过敏",
    "受不了",
    "不吃",
    "不喝",
    "只吃",
    "只喝",
    "吃素",
    "偏好",
    "害怕",
];
const CN_PLAN: &[&str] = &[
    "打算",
    "计划",
    "准备",
    "要去",
    "想去",
    "将要",
    "决定",
    "目标",
    "下周",
    "下个月",
    "下月",
    "明年",
    "明天",
    "后天",
    "今晚",
    "周末",
    "以后",
    "每天",
    "每周",
    "每个月",
    "每月",
    "每年",
    "预约",
    "约了",
    "安排",
];
const CN_DATE: &[&str] = &[
    "星期",
    "礼拜",
    "周一",
    "周二",
    "周三",
    "周四",
    "周五",
    "周六",
    "周日",
    "周天",
    "昨天",
    "前天",
    "上周",
    "上个月",
    "去年",
    "今年",
    "生日",
    "纪念日",
    "上午",
    "下午",
    "晚上",
    "早上",
    "中午",
];
const CN_LIFE_TOPICS: &[&str] = &[
    // Health.
    "医院",
    "医生",
    "手术",
    "病",
    "药",
    "过敏",
    "复查",
    "体检",
    "怀孕",
    "抑郁",
    "焦虑",
    "失眠",
    "身体",
    // Relationships.
    "老公",
    "老婆",
    "丈夫",
    "妻子",
    "男朋友",
    "女朋友",
    "对象",
    "分手",
    "结婚",
    "离婚",
    "婚礼",
    "女儿",
    "儿子",
    "孩子",
    "妈妈",
    "爸爸",
    "母亲",
    "父亲",
    "父母",
    "爷爷",
    "奶奶",
    "外婆",
    "姥姥",
    "哥哥",
    "姐姐",
    "弟弟",
    "妹妹",
    "朋友",
    "闺蜜",
    "猫",
    "狗",
    "宠物",
    // Work and school.
    "工作",
    "上班",
    "公司",
    "老板",
    "领导",
    "同事",
    "工资",
    "面试",
    "辞职",
    "升职",
    "加班",
    "考试",
    "考研",
    "学校",
    "大学",
    "老师",
    "学生",
    "毕业",
    "课",
    // Money.
    "钱",
    "房租",
    "贷款",
    "存款",
    "还款",
    "欠",
    "买房",
];
const CN_FILLER: &[&str] = &[
    "你好",
    "您好",
    "谢谢",
    "多谢",
    "再见",
    "拜拜",
    "晚安",
    "早上好",
    "早安",
    "晚上好",
    "中午好",
    "下午好",
    "辛苦了",
    "不客气",
    "哈",
    "嘻",
    "呵",
    "嘿",
    "嗯",
    "哦",
    "噢",
    "啊",
    "呀",
    "哇",
    "好的",
    "好吧",
    "好啊",
    "无聊",
    "在吗",
    "没事",
    "没什么",
    "随便",
    "聊聊",
    "知道了",
    "是吗",
    "真的吗",
];
const CN_QUESTION: &[&str] =
    &["什么", "怎么", "哪", "几", "谁", "为什么", "多少", "吗", "给我", "帮我", "讲个", "能不能", "可以吗"];
/// Chinese numerals; ASCII digits are counted as English numbers already.
const CN_NUMERALS: &[char] =
    &['一', '二', '三', '四', '五', '六', '七', '八', '九', '十', '两', '零', '〇', '百', '千', '万'];
/// Units that make a preceding numeral a quantity ("六岁", "三千", "五公里").
const CN_UNITS: &[char] = &['岁', '月', '日', '号', '点', '年', '块', '元', '千', '万', '百', '公', '斤', '次', '周'];
/// Units that make a preceding number a date or time ("10月", "5日", "十点").
const CN_DATE_UNITS: &[char] = &['月', '日', '号', '点'];

fn starts_with_at(chars: &[char], at: usize, pattern: &str) -> Option<usize> {
    let mut length = 0;
    for expected in pattern.chars() {
        if chars.get(at + length) != Some(&expected) {
            return None;
        }
        length += 1;
    }
    Some(length)
}

fn any_at(chars: &[char], at: usize, patterns: &[&str]) -> bool {
    patterns.iter().any(|pattern| starts_with_at(chars, at, pattern).is_some())
}

pub(super) fn chinese_cues(chars: &[char], evidence: &mut Evidence) {
    let mut filler_until = 0;
    for (at, &c) in chars.iter().enumerate() {
        // Everything below starts with a CJK character (or a digit or 《); skip the rest.
        if !is_cjk(c) && !c.is_ascii_digit() && c != '《' {
            continue;
        }
        let previous = at.checked_sub(1).map(|p| chars[p]);
        let next = chars.get(at + 1).copied();
        let count = |hit: bool, counter: &mut u32| *counter += u32::from(hit);
        if c == '我' {
            let object = previous.is_some_and(|p| CN_NOT_SUBJECT_BEFORE.contains(&p));
            let hedge = any_at(chars, at + 1, CN_HEDGES);
            count(!object && !hedge, &mut evidence.self_disclosure);
        }
        // "叫" names someone ("女儿叫小雨") unless it asks ("你叫什么").
        let names = c == '叫' && !previous.is_some_and(|p| matches!(p, '你' | '您'));
        count(names || any_at(chars, at, CN_IDENTITY), &mut evidence.identity);
        count(any_at(chars, at, CN_PREFERENCE), &mut evidence.preference);
        count(any_at(chars, at, CN_PLAN), &mut evidence.plan);
        count(c == '《', &mut evidence.named_entity);
        let numeral = CN_NUMERALS.contains(&c);
        // "一点" is mostly "a little", not "one o'clock".
        let quantity = numeral && next.is_some_and(|n| CN_UNITS.contains(&n)) && !(c == '一' && next == Some('点'));
        count(quantity, &mut evidence.number);
        let dated = (numeral || c.is_ascii_digit())
            && next.is_some_and(|n| CN_DATE_UNITS.contains(&n))
            && !(c == '一' && next == Some('点'));
        count(dated || any_at(chars, at, CN_DATE), &mut evidence.date_or_time);
        count(any_at(chars, at, CN_LIFE_TOPICS), &mut evidence.life_topic);
        count(any_at(chars, at, CN_MOMENTARY), &mut evidence.momentary);
        evidence.question_or_request |= any_at(chars, at, CN_QUESTION);
        if let Some(length) = CN_FILLER.iter().filter_map(|pattern| starts_with_at(chars, at, pattern)).max() {
            let end = at + length;
            evidence.filler_units += end - at.max(filler_until).min(end);
            filler_until = filler_until.max(end);
        }
    }
}
