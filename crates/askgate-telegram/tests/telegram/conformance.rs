//! The adapter conformance suite (`askgate_testkit::conformance`, the rules
//! of `docs/adapter-spec.md`) run against the fake Bot API.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use std::time::Duration;

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

/// A message as the fake Telegram shows it.
fn shown_on(fake: &FakeTelegram, conversation: &str, message: &str) -> Shown {
    let stored = fake
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
        shown_on(&self.fake, conversation, message)
    }

    fn refuse_next_send(&self) {
        self.fake
            .fail_next("sendMessage", Failure::BadRequest("Bad Request: chat not found".into()));
    }

    async fn rate_limit_next_send(&self) -> Duration {
        // Telegram names whole seconds (`parameters.retry_after`).
        self.fake
            .fail_next("sendMessage", Failure::TooManyRequests { retry_after: 1 });
        Duration::from_secs(1)
    }

    async fn texts(&self, conversation: &str) -> Vec<String> {
        let chat: i64 = conversation.parse().unwrap();
        let messages = self.fake.messages().remove(&chat).unwrap_or_default();
        messages
            .iter()
            .map(|message| message["text"].as_str().unwrap_or_default().to_owned())
            .collect()
    }
}

#[tokio::test]
async fn the_telegram_adapter_conforms() {
    let fake = FakeTelegram::start().await;
    fake.add_chat(&TgChat::private(CHAT));
    let channel = TelegramChannel::new("tg", fake.token(), Some(fake.api_url().parse().unwrap()));
    conformance::run(&Telegram { fake, channel }).await;
}

/// The inbound suite (`conformance::inbound`): a person in Telegram, with the
/// real engine and store behind the adapter, in both of its inbound modes.
mod inbound {
    use std::sync::{Arc, OnceLock};
    use std::time::Duration;

    use askgate_adapter::Inbound;
    use askgate_core::QuestionId;
    use askgate_core::channel::{Channel, InboundEvent, InboundSink, MessageRef, UserRef};
    use askgate_engine::{Engine, Recipient};
    use askgate_store::QuestionRecord;
    use askgate_telegram::TelegramChannel;
    use askgate_testkit::conformance::inbound::{self, GROUP, PATIENCE, PERSON, PersonPlatform, Seen, Who, recipient};
    use askgate_testkit::conformance::nudges::{self, Posted};
    use askgate_testkit::conformance::{Shown, edges};
    use askgate_testkit::telegram::{Call, FakeTelegram, TgChat, TgMention, TgUser};
    use async_trait::async_trait;
    use serde_json::{Value, json};

    const ALICE: i64 = 1001;
    const BOB: i64 = 1002;
    const ROOM: i64 = -2002;
    const WEBHOOK_PATH: &str = "/telegram/tg";
    const WEBHOOK_SECRET: &str = "conformance-webhook-secret-0123456789abcdef";
    /// How long a reply queued for its chat's turn may take to go out: the
    /// chat's send line paces a chat to one message a second.
    const QUIET: Duration = Duration::from_secs(5);

    /// Every scenario but Answer…: Telegram has no forms.
    fn scenarios() -> Vec<&'static str> {
        inbound::every_scenario_but(&["answer_opens_a_form_whose_submission_answers"])
    }

    /// Every nudge scenario: Telegram has groups.
    const NUDGES: [&str; 5] = nudges::EVERY_NUDGE;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Mode {
        Polling,
        Webhook,
    }

    struct Telegram {
        fake: FakeTelegram,
        channel: Arc<TelegramChannel>,
        mode: Mode,
        /// The engine the suite connected, to see when a force-reply is attached.
        engine: OnceLock<Engine>,
    }

    fn user(who: Who) -> TgUser {
        match who {
            Who::Recipient => TgUser::new(ALICE, "Alice"),
            Who::Stranger => TgUser::new(BOB, "Bob"),
        }
    }

    fn room() -> TgChat {
        TgChat::group(ROOM, "Release team")
    }

    /// The chat a question is in, and its message's id.
    fn question_message(question: &QuestionRecord) -> (TgChat, i64) {
        let message = &question.delivery().unwrap().messages[0];
        let chat = match message.conversation.parse::<i64>().unwrap() {
            ROOM => room(),
            ALICE => TgChat::private(ALICE),
            other => panic!("the suite's question went to chat {other}"),
        };
        (chat, message.message.parse().unwrap())
    }

    fn sends(calls: &[Call]) -> impl Iterator<Item = &Value> {
        calls
            .iter()
            .filter(|call| call.method == "sendMessage")
            .map(|call| &call.body)
    }

    fn edits_of(calls: &[Call], chat: i64, message: i64) -> usize {
        calls
            .iter()
            .filter(|call| {
                call.method == "editMessageText"
                    && call.body["chat_id"] == json!(chat)
                    && call.body["message_id"] == json!(message)
            })
            .count()
    }

    impl Telegram {
        async fn start(mode: Mode) -> Self {
            let fake = FakeTelegram::start().await;
            fake.add_chat(&TgChat::private(ALICE));
            fake.add_chat(&room());
            let channel = Arc::new(TelegramChannel::new(
                "tg",
                fake.token(),
                Some(fake.api_url().parse().unwrap()),
            ));
            Self {
                fake,
                channel,
                mode,
                engine: OnceLock::new(),
            }
        }

        /// The bot's newest message in `chat` replying to `message`: the
        /// force-reply Other… sent.
        fn force_reply_to(&self, chat: i64, message: i64) -> Option<i64> {
            self.fake
                .messages()
                .get(&chat)?
                .iter()
                .rev()
                .find(|sent| sent["reply_to_message"]["message_id"] == json!(message))
                .and_then(|sent| sent["message_id"].as_i64())
        }

        /// `who` sends `text` in the question's chat as a reply to `reply_to`,
        /// and sees, once Telegram's update is confirmed, the bot's reply to
        /// it, or nothing (the question's message edited into its summary
        /// instead, or nothing within [`QUIET`]).
        async fn send(&self, who: Who, question: &QuestionRecord, text: &str, reply_to: i64) -> Seen {
            let (chat, question) = question_message(question);
            // Counted before the message: the engine may end the question
            // (and the edit go out) before Telegram hears the update confirmed.
            let edits_before = edits_of(&self.fake.calls(), chat.id, question);
            let update = self.fake.message(&user(who), &chat, text, Some(reply_to), None);
            let chat = chat.id;
            let update_id = update["update_id"].clone();
            let message = update["message"]["message_id"].as_i64().unwrap();
            let confirmed = tokio::time::timeout(PATIENCE, async {
                while self
                    .fake
                    .pending_updates()
                    .iter()
                    .any(|pending| pending["update_id"] == update_id)
                {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await;
            if confirmed.is_err() {
                return Seen::Nothing;
            }
            let shown = tokio::time::timeout(QUIET, async {
                loop {
                    let reply = self.fake.messages().get(&chat).and_then(|sent| {
                        sent.iter()
                            .find(|sent| sent["reply_to_message"]["message_id"] == json!(message))
                            .cloned()
                    });
                    if let Some(reply) = reply {
                        return Seen::Reply {
                            text: reply["text"].as_str().unwrap().to_owned(),
                        };
                    }
                    if edits_of(&self.fake.calls(), chat, question) > edits_before {
                        return Seen::Nothing;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await;
            shown.unwrap_or(Seen::Nothing)
        }

        /// Waits until the engine knows the force-reply `message` belongs to
        /// `question`: a reply to it sooner could find no question, where a
        /// person could not even have seen it yet.
        async fn attached(&self, chat: i64, message: i64, question: &QuestionId) {
            let engine = self.engine.get().expect("the suite connected the engine");
            let force = MessageRef {
                conversation: chat.to_string(),
                message: message.to_string(),
            };
            tokio::time::timeout(PATIENCE, async {
                while engine
                    .store()
                    .question_for_message("tg", &force)
                    .await
                    .unwrap()
                    .as_ref()
                    != Some(question)
                {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await
            .expect("the force-reply is attached to its question");
        }
    }

    #[async_trait]
    impl PersonPlatform for Telegram {
        async fn shown(&self, message: &MessageRef) -> Option<Shown> {
            Some(super::shown_on(&self.fake, &message.conversation, &message.message))
        }

        fn violations(&self) -> Vec<String> {
            self.fake.violations()
        }

        fn user(&self, who: Who) -> UserRef {
            let user = user(who);
            UserRef {
                id: user.id.to_string(),
                display_name: user.first_name,
            }
        }

        async fn posted(&self, conversation: &str) -> Option<Vec<Posted>> {
            let chat = conversation.parse().ok()?;
            let posted = self
                .fake
                .bot_messages_in(chat)
                .into_iter()
                .map(|message| Posted {
                    message: message.message_id.to_string(),
                    reply_to: message.reply_to.map(|id| id.to_string()),
                    text: message.text,
                    mentions: message
                        .mentions
                        .iter()
                        .map(|mention| match mention {
                            TgMention::User(id) => id.to_string(),
                            TgMention::Username(name) => format!("@{name}"),
                        })
                        .collect(),
                })
                .collect();
            Some(posted)
        }

        async fn write_privately(&self, who: Who, text: &str) -> Seen {
            let chat = TgChat::private(user(who).id);
            let said = self.fake.message(&user(who), &chat, text, None, None);
            let id = said["message"]["message_id"].clone();
            let reply = tokio::time::timeout(PATIENCE, async {
                loop {
                    let reply = self.fake.messages().get(&chat.id).and_then(|sent| {
                        sent.iter()
                            .find(|sent| sent["reply_to_message"]["message_id"] == id)
                            .cloned()
                    });
                    if let Some(reply) = reply {
                        return reply;
                    }
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
            })
            .await;
            reply.map_or(Seen::Nothing, |reply| Seen::Reply {
                text: reply["text"].as_str().unwrap().to_owned(),
            })
        }

        fn redelivers(&self, event: &InboundEvent) -> bool {
            Inbound::redelivers(&*self.channel, event)
        }

        fn channel(&self) -> Arc<dyn Channel> {
            self.channel.clone()
        }

        fn recipients(&self) -> Vec<Recipient> {
            vec![
                recipient(PERSON, "Alice", "tg", &ALICE.to_string(), &[]),
                recipient(GROUP, "Release team", "tg", &ROOM.to_string(), &[&ALICE.to_string()]),
            ]
        }

        async fn connect(&self, engine: Engine, sink: Arc<dyn InboundSink>) {
            self.engine.set(engine).unwrap();
            match self.mode {
                Mode::Polling => {
                    let channel = self.channel.clone();
                    // The poller ends with the test's runtime.
                    tokio::spawn(askgate_telegram::polling::run(channel, sink, std::future::pending()));
                }
                Mode::Webhook => {
                    let router =
                        askgate_telegram::http::router(WEBHOOK_PATH, self.channel.clone(), sink, &[WEBHOOK_SECRET]);
                    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                    let base = format!("http://{}", listener.local_addr().unwrap());
                    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
                    let url = format!("https://askgate.test{WEBHOOK_PATH}").parse().unwrap();
                    askgate_telegram::http::register(&self.channel, url, WEBHOOK_SECRET)
                        .await
                        .unwrap();
                    // The fake stands in for Telegram behind a reverse proxy.
                    self.fake.deliver_webhooks_to(&base);
                }
            }
        }

        async fn tap(&self, who: Who, question: &QuestionRecord, token: &str) -> Seen {
            let (chat, message) = question_message(question);
            let sends_before = sends(&self.fake.calls()).count();
            let tapper = user(who);
            let update = self.fake.tap(&tapper, &chat, message, token);
            let callback = update["callback_query"]["id"].clone();
            let answered = |calls: &[Call]| {
                calls
                    .iter()
                    .find(|call| call.method == "answerCallbackQuery" && call.body["callback_query_id"] == callback)
                    .map(|call| call.body.clone())
            };
            let Ok(calls) = self.fake.wait_until(PATIENCE, |calls| answered(calls).is_some()).await else {
                return Seen::Nothing;
            };
            let answer = answered(&calls).unwrap();
            if let Some(text) = answer["text"].as_str() {
                return Seen::Notice {
                    text: text.to_owned(),
                    alert: answer["show_alert"] == json!(true),
                };
            }
            // No notice: a force-reply aimed at the tapper may follow, in the chat's turn.
            let mention = format!("tg://user?id={}", tapper.id);
            let aimed = |body: &Value| {
                body["chat_id"] == json!(chat.id)
                    && body["reply_markup"]["force_reply"] == json!(true)
                    && body["reply_markup"]["selective"] == json!(true)
                    && body["text"].as_str().is_some_and(|text| text.contains(&mention))
            };
            let force_reply = self
                .fake
                .wait_until(QUIET, |calls| sends(calls).skip(sends_before).any(aimed))
                .await;
            if force_reply.is_err() {
                return Seen::Nothing;
            }
            let force = self
                .force_reply_to(chat.id, message)
                .expect("the force-reply is stored");
            self.attached(chat.id, force, &question.id).await;
            Seen::FreeTextInput
        }

        async fn type_reply(&self, who: Who, question: &QuestionRecord, text: &str) -> Seen {
            let (_, message) = question_message(question);
            self.send(who, question, text, message).await
        }

        async fn answer_free_text(&self, who: Who, question: &QuestionRecord, text: &str) -> Seen {
            let (chat, message) = question_message(question);
            let force = self
                .force_reply_to(chat.id, message)
                .expect("Other… sent a force-reply to answer");
            self.send(who, question, text, force).await
        }
    }

    /// Prompts at the contract's edges: every request valid by the Bot API's
    /// published spec, delivered, answered and edited (`conformance::edges`).
    #[tokio::test]
    async fn edge_prompts() {
        let telegram = Telegram::start(Mode::Polling).await;
        assert_eq!(edges::run(&telegram).await, edges::requests().len());
    }

    /// Reminders and notes under prompts the engine delivered
    /// (`conformance::nudges`): replies with a text mention of the person.
    #[tokio::test]
    async fn nudges() {
        let telegram = Telegram::start(Mode::Polling).await;
        assert_eq!(nudges::run(&telegram).await, NUDGES);
        // Each reply was sent as one: `reply_parameters`, previews off.
        let replies: Vec<Value> = sends(&telegram.fake.calls())
            .filter(|body| body.get("reply_parameters").is_some())
            .cloned()
            .collect();
        assert_eq!(replies.len(), 4, "{replies:?}");
        for body in &replies {
            assert_eq!(
                body["reply_parameters"]["allow_sending_without_reply"],
                json!(true),
                "{body}"
            );
            assert_eq!(body["link_preview_options"]["is_disabled"], json!(true), "{body}");
        }
    }

    #[tokio::test]
    async fn inbound_polling() {
        let telegram = Telegram::start(Mode::Polling).await;
        assert_eq!(inbound::run(&telegram).await, scenarios());
        // The failed update was polled again from the same offset, not skipped.
        let offsets: Vec<Value> = telegram
            .fake
            .calls_to("getUpdates")
            .iter()
            .map(|call| call.body["offset"].clone())
            .collect();
        assert!(
            offsets.windows(2).any(|pair| pair[0] == pair[1] && pair[0] != json!(0)),
            "{offsets:?}"
        );
    }

    #[tokio::test]
    async fn inbound_webhook() {
        let telegram = Telegram::start(Mode::Webhook).await;
        assert_eq!(inbound::run(&telegram).await, scenarios());
        // The update the store failed was answered 503, and Telegram sent it
        // again until askgate answered 200.
        let deliveries = telegram.fake.webhook_deliveries();
        let refused: Vec<i64> = deliveries
            .iter()
            .filter(|delivery| delivery.status == Some(503))
            .map(|delivery| delivery.update_id)
            .collect();
        assert_eq!(refused.len(), 1, "{deliveries:?}");
        let attempts = telegram.fake.wait_for_delivery(refused[0], PATIENCE).await.unwrap();
        assert_eq!(attempts.len(), 2, "{attempts:?}");
    }
}
