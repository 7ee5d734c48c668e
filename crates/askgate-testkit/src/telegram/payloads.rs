//! `Update` samples shaped as Telegram sends them (written for askgate; the
//! samples Telegram documents, and ones captured from it, are in
//! `askgate-telegram`'s `tests/samples/`), for
//! decoding tests: the JSON files in `tests/payloads/telegram/`.

/// `Update` samples shaped as Telegram sends them, by name:
/// `callback_query`, `callback_query_inaccessible`, `message_private`,
/// `message_group_reply`, `message_supergroup_reply`, `edited_message`,
/// `sticker`, `forum_topic_message`, `message_reaction` (a kind askgate does
/// not handle) and `unknown_kind` (a kind no client knows yet).
pub const TELEGRAM_PAYLOADS: &[(&str, &str)] = &[
    (
        "callback_query",
        include_str!("../../tests/payloads/telegram/callback_query.json"),
    ),
    (
        "callback_query_inaccessible",
        include_str!("../../tests/payloads/telegram/callback_query_inaccessible.json"),
    ),
    (
        "message_private",
        include_str!("../../tests/payloads/telegram/message_private.json"),
    ),
    (
        "message_group_reply",
        include_str!("../../tests/payloads/telegram/message_group_reply.json"),
    ),
    (
        "message_supergroup_reply",
        include_str!("../../tests/payloads/telegram/message_supergroup_reply.json"),
    ),
    (
        "edited_message",
        include_str!("../../tests/payloads/telegram/edited_message.json"),
    ),
    ("sticker", include_str!("../../tests/payloads/telegram/sticker.json")),
    (
        "forum_topic_message",
        include_str!("../../tests/payloads/telegram/forum_topic_message.json"),
    ),
    (
        "message_reaction",
        include_str!("../../tests/payloads/telegram/message_reaction.json"),
    ),
    (
        "unknown_kind",
        include_str!("../../tests/payloads/telegram/unknown_kind.json"),
    ),
];

/// One `Update` sample from [`TELEGRAM_PAYLOADS`], by name (`.json` optional).
///
/// # Panics
///
/// If there is no sample with that name.
pub fn telegram_payload(name: &str) -> &'static str {
    let name = name.strip_suffix(".json").unwrap_or(name);
    match TELEGRAM_PAYLOADS.iter().find(|(sample, _)| *sample == name) {
        Some((_, payload)) => payload,
        None => {
            let names: Vec<&str> = TELEGRAM_PAYLOADS.iter().map(|(sample, _)| *sample).collect();
            panic!("no Telegram payload sample named {name:?}; there are {names:?}")
        }
    }
}
