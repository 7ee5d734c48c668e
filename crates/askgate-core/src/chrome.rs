//! Everything askgate itself writes to a person ("the chrome"), in English
//! and Simplified Chinese (spec §4). Agent text never passes through here.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::text::Limit;
use crate::when::Deadline;

/// The shortest wait whose heading tells the deadline rather than the
/// length (when the deadline is known): a day.
pub const LONG_WAIT_SECONDS: u32 = 86_400;

/// The language of the chrome, chosen per recipient or channel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Locale {
    /// English.
    #[default]
    #[serde(rename = "en")]
    En,
    /// Simplified Chinese.
    #[serde(rename = "zh-CN")]
    ZhCn,
}

impl Locale {
    /// The locale's tag, `en` or `zh-CN`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::En => "en",
            Self::ZhCn => "zh-CN",
        }
    }

    /// The wording for this locale.
    pub fn chrome(self) -> Chrome {
        Chrome(self)
    }
}

impl fmt::Display for Locale {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A locale tag other than `en` or `zh-CN`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown locale \"{0}\": use \"en\" or \"zh-CN\"")]
pub struct UnknownLocale(pub String);

impl FromStr for Locale {
    type Err = UnknownLocale;

    fn from_str(tag: &str) -> Result<Self, Self::Err> {
        match tag {
            "en" => Ok(Self::En),
            "zh-CN" => Ok(Self::ZhCn),
            other => Err(UnknownLocale(other.to_owned())),
        }
    }
}

/// Where a person answered or skipped a question, as its summary names it
/// ("Answered by Alice in Telegram").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place<'a> {
    /// askgate's own page, named in askgate's words in the reader's
    /// language ("the web page", "网页").
    Page,
    /// A chat platform, by the name its adapter declares (`Telegram`):
    /// askgate itself names no platform. A surface whose adapter is not
    /// known (a channel since removed) is named by its kind as it is.
    Platform(&'a str),
}

/// askgate's own wording in one locale.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chrome(Locale);

impl Chrome {
    /// How long the person has: `15 min`, `45 s`, `1 h`, and for long
    /// waits `2 h 30 min`, `1 d 4 h`. Rounded down, so the person is never
    /// told they have longer than they do: seconds below 5 minutes (unless
    /// the time is whole minutes), minutes below an hour, hours and
    /// minutes below a day, days and hours from a day on.
    pub fn duration(self, seconds: u32) -> String {
        let zh = self.0 == Locale::ZhCn;
        let unit = |count: u32, en: &str, chinese: &str| {
            if zh {
                format!("{count} {chinese}")
            } else {
                format!("{count} {en}")
            }
        };
        // The larger unit, and the smaller one when it is not zero.
        let two = |(count, en, chinese): (u32, &str, &str), (rest, rest_en, rest_zh): (u32, &str, &str)| {
            let first = unit(count, en, chinese);
            if rest == 0 {
                first
            } else {
                format!("{first} {}", unit(rest, rest_en, rest_zh))
            }
        };
        let (days, hours, minutes) = (seconds / 86_400, seconds % 86_400 / 3600, seconds % 3600 / 60);
        if days > 0 {
            two((days, "d", "天"), (hours, "h", "小时"))
        } else if hours > 0 {
            two((hours, "h", "小时"), (minutes, "min", "分钟"))
        } else if seconds.is_multiple_of(60) || seconds >= 300 {
            unit(minutes, "min", "分钟")
        } else {
            unit(seconds, "s", "秒")
        }
    }

    /// A reminder under a prompt nobody answered yet, `left` seconds before
    /// it expires.
    pub fn reminder(self, left: u32) -> String {
        let left = self.duration(left);
        match self.0 {
            Locale::En => format!("Still waiting for your answer — {left} left."),
            Locale::ZhCn => format!("仍在等待你的回答——还剩 {left}。"),
        }
    }

    /// The word under a copy of a question that was escalated to `to`
    /// (a recipient's display name).
    pub fn escalated(self, to: &str) -> String {
        match self.0 {
            Locale::En => format!("No answer yet, so this question was also sent to {to}. The first answer counts."),
            Locale::ZhCn => format!("尚未收到回答，此问题已同时发送给 {to}，以最先收到的回答为准。"),
        }
    }

    /// What an admin is told when a question for `recipient` could not
    /// reach them on `channel`, and why.
    pub fn undeliverable(self, recipient: &str, channel: &str, reason: &str) -> String {
        match self.0 {
            Locale::En => format!("A question for {recipient} could not be delivered on {channel}: {reason}"),
            Locale::ZhCn => format!("发给 {recipient} 的问题无法通过 {channel} 送达：{reason}"),
        }
    }

    /// The first line of every prompt: how long the person has.
    pub fn heading(self, questions: usize, timeout_seconds: u32) -> String {
        self.heading_by(questions, timeout_seconds, None)
    }

    /// [`Chrome::heading`], except that a wait of a day or more with a
    /// known `deadline` reads with the deadline in the person's local time
    /// (`reply by Tue 8 Dec, 09:32`): "within 2 d 4 h" leaves the person
    /// to add it up, and a long wait is the one they come back to later.
    pub fn heading_by(self, questions: usize, timeout_seconds: u32, deadline: Option<&Deadline>) -> String {
        let by = deadline
            .filter(|_| timeout_seconds >= LONG_WAIT_SECONDS)
            .map(|deadline| deadline.text(self.0));
        match (self.0, questions, by) {
            (Locale::En, 1, Some(by)) => format!("Question for you (reply by {by})"),
            (Locale::En, _, Some(by)) => format!("Questions for you (reply by {by})"),
            (Locale::ZhCn, _, Some(by)) => format!("有问题需要你回答（请在 {by} 前回复）"),
            (Locale::En, 1, None) => format!("Question for you (reply within {})", self.duration(timeout_seconds)),
            (Locale::En, _, None) => format!("Questions for you (reply within {})", self.duration(timeout_seconds)),
            (Locale::ZhCn, _, None) => format!("有问题需要你回答（请在 {}内回复）", self.duration(timeout_seconds)),
        }
    }

    /// The mark after the header of a multi-select question.
    pub fn choose_any(self) -> &'static str {
        match self.0 {
            Locale::En => " (choose any)",
            Locale::ZhCn => "（可多选）",
        }
    }

    /// How to answer one single-select question shown as text.
    pub fn reply_single(self) -> &'static str {
        match self.0 {
            Locale::En => "Reply with a number, an option's name, or your own words.",
            Locale::ZhCn => "请回复编号、选项名称，或用你自己的话回答。",
        }
    }

    /// How to answer one multi-select question; `example` is like `1, 3`.
    pub fn reply_multi(self, example: &str) -> String {
        match self.0 {
            Locale::En => format!("Reply with one or more numbers or names, e.g. {example} — or your own words."),
            Locale::ZhCn => format!("请回复一个或多个编号或名称，例如 {example}，也可以用你自己的话回答。"),
        }
    }

    /// How to answer several questions; `examples` are like `1: 2`.
    pub fn reply_several(self, examples: &[String]) -> String {
        let quoted: Vec<String> = examples
            .iter()
            .map(|example| match self.0 {
                Locale::En => format!("\"{example}\""),
                Locale::ZhCn => format!("“{example}”"),
            })
            .collect();
        let joined = match (self.0, quoted.split_last()) {
            (_, None) => String::new(),
            (_, Some((last, []))) => last.clone(),
            (Locale::En, Some((last, rest))) => format!("{} and {last}", rest.join(", ")),
            (Locale::ZhCn, Some((last, rest))) => format!("{}和{last}", rest.join("、")),
        };
        match self.0 {
            Locale::En => format!(
                "Reply with one line per question, e.g. {joined}.\nUse a number, an option's name, or your own words."
            ),
            Locale::ZhCn => {
                format!("每个问题回复一行，例如 {joined}。\n可以回复编号、选项名称，或用你自己的话回答。")
            }
        }
    }

    /// What stands between two sentences: a space, or nothing in Chinese.
    pub fn sentence_gap(self) -> &'static str {
        match self.0 {
            Locale::En => " ",
            Locale::ZhCn => "",
        }
    }

    /// How to skip; ends every text prompt.
    pub fn skip_hint(self) -> &'static str {
        match self.0 {
            Locale::En => "Reply \"skip\" to skip.",
            Locale::ZhCn => "回复“跳过”可跳过。",
        }
    }

    /// The button that lets the person type their own answer.
    pub fn other_button(self) -> &'static str {
        match self.0 {
            Locale::En => "Other…",
            Locale::ZhCn => "其他…",
        }
    }

    /// The button of a text prompt that opens a form with one field per question.
    pub fn answer_button(self) -> &'static str {
        match self.0 {
            Locale::En => "Answer…",
            Locale::ZhCn => "回答…",
        }
    }

    /// How to answer a text prompt where typed replies never arrive.
    pub fn form_hint(self) -> &'static str {
        match self.0 {
            Locale::En => "Tap Answer… to answer, or Skip to skip.",
            Locale::ZhCn => "点“回答…”作答，或点“跳过”跳过。",
        }
    }

    /// The title of the form Answer… opens.
    pub fn form_title(self) -> &'static str {
        match self.0 {
            Locale::En => "Your answers",
            Locale::ZhCn => "你的回答",
        }
    }

    /// The button that sends a form or a free-text dialog (Slack's modals
    /// need one).
    pub fn submit_button(self) -> &'static str {
        match self.0 {
            Locale::En => "Submit",
            Locale::ZhCn => "提交",
        }
    }

    /// What a form field's placeholder says after its numbered options.
    pub fn form_placeholder_tail(self) -> &'static str {
        match self.0 {
            Locale::En => "a number, a name, or your own words",
            Locale::ZhCn => "编号、名称或你自己的话",
        }
    }

    /// The notice when an answer reached askgate but could not be saved, on
    /// a platform that will not deliver it again.
    pub fn not_saved(self) -> &'static str {
        match self.0 {
            Locale::En => "Your answer could not be saved. Please try again in a moment.",
            Locale::ZhCn => "你的回答未能保存，请稍后再试。",
        }
    }

    /// The button that skips the question.
    pub fn skip_button(self) -> &'static str {
        match self.0 {
            Locale::En => "Skip",
            Locale::ZhCn => "跳过",
        }
    }

    /// The title of the free-text input (a modal's title, a force-reply's text).
    pub fn free_text_title(self) -> &'static str {
        match self.0 {
            Locale::En => "Your answer",
            Locale::ZhCn => "你的回答",
        }
    }

    /// The placeholder of the free-text input.
    pub fn free_text_placeholder(self) -> &'static str {
        match self.0 {
            Locale::En => "Type your answer",
            Locale::ZhCn => "输入你的回答",
        }
    }

    /// The notice after an accepted answer.
    pub fn answer_submitted(self) -> &'static str {
        match self.0 {
            Locale::En => "Answer submitted",
            Locale::ZhCn => "回答已提交",
        }
    }

    /// The notice after a skip.
    pub fn skip_submitted(self) -> &'static str {
        match self.0 {
            Locale::En => "Skipped",
            Locale::ZhCn => "已跳过",
        }
    }

    /// The notice for an answer to a question that was answered already.
    pub fn already_answered(self) -> &'static str {
        match self.0 {
            Locale::En => "This question was already answered",
            Locale::ZhCn => "这个问题已经有人回答了",
        }
    }

    /// The notice for an answer to a question that expired.
    pub fn expired(self) -> &'static str {
        match self.0 {
            Locale::En => "This question has expired",
            Locale::ZhCn => "这个问题已过期",
        }
    }

    /// The notice for an answer to a question that was cancelled or skipped.
    pub fn closed(self) -> &'static str {
        match self.0 {
            Locale::En => "This question is closed",
            Locale::ZhCn => "这个问题已关闭",
        }
    }

    /// The notice, seen only by them, for someone not allowed to answer.
    pub fn not_for_you(self, recipient: &str) -> String {
        let recipient = person(recipient);
        match self.0 {
            Locale::En => format!("This question is for {recipient}"),
            Locale::ZhCn => format!("这个问题是问 {recipient} 的"),
        }
    }

    /// The reply to an empty or non-text message (a sticker, a photo).
    pub fn not_an_answer(self) -> &'static str {
        match self.0 {
            Locale::En => {
                "That isn't an answer I can read. Reply with a number, an option's name, or your own words — or \"skip\"."
            }
            Locale::ZhCn => "无法识别这条回复。请回复编号、选项名称或你自己的话，也可以回复“跳过”。",
        }
    }

    /// The reply in a direct conversation when no question is waiting.
    pub fn nothing_pending(self) -> &'static str {
        match self.0 {
            Locale::En => "There is no question waiting for you right now.",
            Locale::ZhCn => "目前没有等待你回答的问题。",
        }
    }

    /// The reply to `/link` in a person's direct chat: their own page link.
    pub fn page_link(self, link: &str) -> String {
        match self.0 {
            Locale::En => format!(
                "Your askgate page: {link}\nIt shows every question for you, and you can answer there too. The link is yours alone: do not share it."
            ),
            Locale::ZhCn => format!(
                "你的 askgate 页面：{link}\n这里显示所有给你的问题，也可以在这里回答。此链接仅供你本人使用，请勿分享。"
            ),
        }
    }

    /// The reply to `/link` when askgate has no page link for the person.
    pub fn no_page_link(self) -> &'static str {
        match self.0 {
            Locale::En => "askgate has no page link for you. Ask the person who runs askgate.",
            Locale::ZhCn => "askgate 没有你的页面链接，请联系 askgate 的管理员。",
        }
    }

    /// What a conversation that is no recipient's is told when it writes to
    /// the bot, before the recipient block to configure for it.
    pub fn introduce(self) -> &'static str {
        match self.0 {
            Locale::En => {
                "askgate does not know this conversation yet. To have agents ask questions here, add this recipient to askgate's configuration (rename it as you like) and restart askgate:"
            }
            Locale::ZhCn => {
                "askgate 还不认识这个会话。若要让代理在这里提问，请把下面的收件人加入 askgate 的配置（名称可自行修改），然后重启 askgate："
            }
        }
    }

    /// The refusal of an answer in one's own words that is too long.
    pub fn answer_too_long(self, chars: usize, limit: usize) -> String {
        match self.0 {
            Locale::En => format!(
                "Your answer is {chars} characters long; askgate takes at most {limit}. Please shorten it and send it again."
            ),
            Locale::ZhCn => format!("你的回答有 {chars} 个字符，最多 {limit} 个。请缩短后重新发送。"),
        }
    }

    /// The confirmation of a partial answer: `Got Deploy. Still needed: Notify`.
    pub fn got_still_needed(self, took: &[&str], missing: &[&str]) -> String {
        match self.0 {
            Locale::En => {
                let got = if took.is_empty() {
                    "Nothing new".to_owned()
                } else {
                    format!("Got {}", took.join(", "))
                };
                format!("{got}. Still needed: {}", missing.join(", "))
            }
            Locale::ZhCn => {
                let got = if took.is_empty() {
                    "没有新的回答".to_owned()
                } else {
                    format!("已收到：{}", took.join("、"))
                };
                format!("{got}。还需要：{}", missing.join("、"))
            }
        }
    }

    /// The line a shortened summary ends with: the person's own words were
    /// cut to fit the message, and where the whole of them is.
    pub fn answers_shortened(self) -> &'static str {
        match self.0 {
            Locale::En => "(Long answers are shortened here: the agent got them whole, and the web page shows them.)",
            Locale::ZhCn => "（较长的回答在此处已缩短：智能体收到的是完整回答，网页上也可查看。）",
        }
    }

    /// The summary of one answered question: `Answered by Alice: Staging`,
    /// or with where it was answered, `Answered by Alice in Telegram:
    /// Staging` ([`Chrome::place_name`]).
    pub fn answered_by(self, who: &str, place: Option<Place<'_>>, answer: &str) -> String {
        let heading = self.answered_by_heading(who, place);
        match self.0 {
            Locale::En => format!("{heading}: {answer}"),
            Locale::ZhCn => format!("{heading}：{answer}"),
        }
    }

    /// The first summary line of several answered questions.
    pub fn answered_by_heading(self, who: &str, place: Option<Place<'_>>) -> String {
        let who = person(who);
        match (self.0, place) {
            (Locale::En, None) => format!("Answered by {who}"),
            (Locale::En, Some(place)) => format!("Answered by {who} in {}", self.place_name(place)),
            (Locale::ZhCn, None) => format!("{who} 已回答"),
            (Locale::ZhCn, Some(place)) => format!("{who} 已在{}回答", self.place_name_zh_spaced(place)),
        }
    }

    /// The summary of a skip, with where it was skipped when given.
    pub fn skipped_by(self, who: &str, place: Option<Place<'_>>) -> String {
        let who = person(who);
        match (self.0, place) {
            (Locale::En, None) => format!("Skipped by {who}"),
            (Locale::En, Some(place)) => format!("Skipped by {who} in {}", self.place_name(place)),
            (Locale::ZhCn, None) => format!("{who} 已跳过"),
            (Locale::ZhCn, Some(place)) => format!("{who} 已在{}跳过", self.place_name_zh_spaced(place)),
        }
    }

    /// What a person calls `place`: a platform by the name its adapter
    /// declares (`Telegram`), askgate's page in askgate's own words
    /// (`the web page`).
    pub fn place_name(self, place: Place<'_>) -> String {
        match (place, self.0) {
            (Place::Platform(name), _) => name.to_owned(),
            (Place::Page, Locale::En) => "the web page".to_owned(),
            (Place::Page, Locale::ZhCn) => "网页".to_owned(),
        }
    }

    /// [`Chrome::place_name`] inside Chinese text: a Latin name is set
    /// off by spaces (`已在 Telegram 回答`), a Chinese one is not (`已在网页回答`).
    fn place_name_zh_spaced(self, place: Place<'_>) -> String {
        let name = self.place_name(place);
        if name.is_ascii() { format!(" {name} ") } else { name }
    }

    /// The summary of an expiry.
    pub fn expired_summary(self) -> &'static str {
        match self.0 {
            Locale::En => "Expired — no answer",
            Locale::ZhCn => "已过期 — 未回答",
        }
    }

    /// The summary of a cancellation.
    pub fn cancelled_summary(self) -> &'static str {
        match self.0 {
            Locale::En => "Cancelled",
            Locale::ZhCn => "已取消",
        }
    }

    /// Joins the values of a multi-select answer.
    pub fn list_separator(self) -> &'static str {
        match self.0 {
            Locale::En => ", ",
            Locale::ZhCn => "、",
        }
    }
}

/// The most of a person's name a message shows, in code points: platforms
/// bound names loosely or not at all (a Slack real name, a Telegram first
/// and last name), and a name is never worth a message its platform refuses.
pub const MAX_NAME_CHARS: usize = 64;

/// A person's name as a message shows it: cut to [`MAX_NAME_CHARS`].
fn person(name: &str) -> String {
    Limit::code_points(MAX_NAME_CHARS).ellipsize(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_round_down_and_read_naturally() {
        let en = Locale::En.chrome();
        assert_eq!(en.duration(900), "15 min");
        assert_eq!(en.duration(30), "30 s");
        assert_eq!(en.duration(90), "90 s");
        assert_eq!(en.duration(299), "299 s");
        assert_eq!(en.duration(301), "5 min");
        assert_eq!(en.duration(3599), "59 min");
        assert_eq!(en.duration(3600), "1 h");
        assert_eq!(Locale::ZhCn.chrome().duration(900), "15 分钟");
    }

    #[test]
    fn long_waits_read_in_days_and_hours_still_rounded_down() {
        let en = Locale::En.chrome();
        let zh = Locale::ZhCn.chrome();
        for (seconds, english, chinese) in [
            (3_660, "1 h 1 min", "1 小时 1 分钟"),
            (3_719, "1 h 1 min", "1 小时 1 分钟"),
            (7_200, "2 h", "2 小时"),
            (9_000, "2 h 30 min", "2 小时 30 分钟"),
            (9_059, "2 h 30 min", "2 小时 30 分钟"),
            (86_399, "23 h 59 min", "23 小时 59 分钟"),
            (86_400, "1 d", "1 天"),
            (100_800, "1 d 4 h", "1 天 4 小时"),
            (104_399, "1 d 4 h", "1 天 4 小时"),
            (604_800, "7 d", "7 天"),
        ] {
            assert_eq!(en.duration(seconds), english, "{seconds}");
            assert_eq!(zh.duration(seconds), chinese, "{seconds}");
        }
    }

    #[test]
    fn a_long_wait_is_headed_with_its_local_deadline_when_known() {
        let zone = crate::when::Zone::parse("Europe/Berlin").unwrap();
        // Asked Mon 7 Dec 2026 09:32 CET, for a day: due Tue 8 Dec, 09:32.
        let now = 1_796_632_320_000;
        let deadline = Deadline {
            at_ms: now + 86_400_000,
            now_ms: now,
            zone,
        };
        let en = Locale::En.chrome();
        let zh = Locale::ZhCn.chrome();
        assert_eq!(
            en.heading_by(1, 86_400, Some(&deadline)),
            "Question for you (reply by Tue 8 Dec, 09:32)"
        );
        assert_eq!(
            en.heading_by(2, 86_400, Some(&deadline)),
            "Questions for you (reply by Tue 8 Dec, 09:32)"
        );
        assert_eq!(
            zh.heading_by(1, 86_400, Some(&deadline)),
            "有问题需要你回答（请在 12月8日 周二 09:32 前回复）"
        );
        // Without a deadline, or under a day, the length as before.
        assert_eq!(en.heading_by(1, 86_400, None), "Question for you (reply within 1 d)");
        assert_eq!(en.heading(1, 100_800), "Question for you (reply within 1 d 4 h)");
        assert_eq!(zh.heading(1, 9_000), "有问题需要你回答（请在 2 小时 30 分钟内回复）");
        assert_eq!(
            en.heading_by(1, 86_399, Some(&deadline)),
            "Question for you (reply within 23 h 59 min)"
        );
    }

    #[test]
    fn locale_tags_round_trip() {
        for locale in [Locale::En, Locale::ZhCn] {
            assert_eq!(locale.as_str().parse::<Locale>(), Ok(locale));
            assert_eq!(serde_json::to_value(locale).unwrap(), locale.as_str());
        }
        assert!("zh".parse::<Locale>().is_err());
    }

    #[test]
    fn partial_confirmation_names_what_was_taken_and_what_is_missing() {
        assert_eq!(
            Locale::En.chrome().got_still_needed(&["Deploy"], &["Notify"]),
            "Got Deploy. Still needed: Notify"
        );
        assert_eq!(
            Locale::ZhCn.chrome().got_still_needed(&["Deploy"], &["Notify", "When"]),
            "已收到：Deploy。还需要：Notify、When"
        );
    }
}
