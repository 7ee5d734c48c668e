//! The adapter conformance suite (`askgate_testkit::conformance`, the rules
//! of `docs/adapter-spec.md`) run against the fake Bot API.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use askgate_core::channel::{Channel, Destination};
use askgate_telegram::TelegramChannel;
use askgate_testkit::conformance::{self, PlatformUnderTest, Shown};
use askgate_testkit::telegram::{Failure, FakeTelegram, TgChat};
use async_trait::async_trait;

const CHAT: i64 = 777;

struct Telegram {
    fake: FakeTelegram,
    channel: TelegramChannel,
}

#[async_trait]
impl PlatformUnderTest for Telegram {
    fn channel(&self) -> &dyn Channel {
        &self.channel
    }

    fn destination(&self) -> Destination {
        Destination {
            conversation: CHAT.to_string(),
            thread: None,
        }
    }

    async fn shown(&self, conversation: &str, message: &str) -> Shown {
        let stored = self
            .fake
            .stored_message(conversation.parse().unwrap(), message.parse().unwrap())
            .expect("the fake has the message");
        let buttons = stored["reply_markup"]["inline_keyboard"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|row| row.as_array().cloned().unwrap_or_default())
            .map(|button| {
                (
                    button["text"].as_str().unwrap().to_owned(),
                    button["callback_data"].as_str().unwrap().to_owned(),
                )
            })
            .collect();
        let mentions = stored["entities"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|entity| matches!(entity["type"].as_str(), Some("mention" | "text_mention")))
            .count();
        Shown {
            text: stored["text"].as_str().unwrap_or_default().to_owned(),
            buttons,
            mentions,
        }
    }

    fn refuse_next_send(&self) {
        self.fake
            .fail_next("sendMessage", Failure::BadRequest("Bad Request: chat not found".into()));
    }
}

#[tokio::test]
async fn the_telegram_adapter_conforms() {
    let fake = FakeTelegram::start().await;
    fake.add_chat(&TgChat::private(CHAT));
    let channel = TelegramChannel::new("tg", fake.token(), Some(fake.api_url().parse().unwrap()));
    conformance::run(&Telegram { fake, channel }).await;
}
