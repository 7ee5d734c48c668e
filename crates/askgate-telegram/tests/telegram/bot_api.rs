//! The adapter against the testkit's fake Bot API, with the real engine and
//! SQLite store behind it: what Telegram is sent, and what taps and replies do.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::Duration;

use askgate_core::channel::{ChannelError, Destination, InboundSink};
use askgate_core::{Locale, validate_json};
use askgate_engine::{Clock, Engine, NewQuestion, NoObserver, Recipient, RecipientSurface, SessionKind};
use askgate_store::{QuestionRecord, QuestionStatus, SqliteStore};
use askgate_telegram::TelegramChannel;
use askgate_testkit::telegram::{Failure, FakeTelegram, TgChat, TgUser};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use serde_json::{Value, json};
use tokio::sync::watch;
use tower::ServiceExt as _;

const PATIENCE: Duration = Duration::from_secs(15);
const ALICE: i64 = 1001;
const BOB: i64 = 1002;
const GROUP: i64 = -2002;

struct Setup {
    fake: FakeTelegram,
    engine: Engine,
    channel: Arc<TelegramChannel>,
    stop: watch::Sender<bool>,
    _dir: tempfile::TempDir,
}

fn alice() -> TgUser {
    TgUser::new(ALICE, "Alice")
}

fn bob() -> TgUser {
    TgUser::new(BOB, "Bob")
}

/// The engine over a fresh store, with a poller taking the fake's updates.
async fn setup() -> Setup {
    let setup = unpolled().await;
    setup.poll();
    setup
}

/// The same without a poller, for webhook deliveries.
async fn unpolled() -> Setup {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(&dir.path().join("askgate.db")).await.unwrap();
    let channel = Arc::new(TelegramChannel::new(
        "tg",
        fake.token(),
        Some(fake.api_url().parse().unwrap()),
    ));
    let recipients = vec![
        Recipient::on(
            "alice",
            "Alice",
            RecipientSurface::new(
                "tg",
                "tg",
                Destination {
                    conversation: ALICE.to_string(),
                    thread: None,
                },
                vec![],
            ),
            Locale::En,
        ),
        Recipient::on(
            "ops",
            "Alice",
            RecipientSurface::new(
                "tg",
                "tg",
                Destination {
                    conversation: GROUP.to_string(),
                    thread: None,
                },
                vec![ALICE.to_string()],
            ),
            Locale::En,
        ),
    ];
    fake.add_chat(&TgChat::private(ALICE));
    fake.add_chat(&TgChat::group(GROUP, "Ops"));
    let engine = Engine::new(
        Arc::new(store),
        vec![channel.clone()],
        recipients,
        Clock::system(),
        Arc::new(NoObserver),
    );
    engine.start().await.unwrap();
    let (stop, _) = watch::channel(false);
    Setup {
        fake,
        engine,
        channel,
        stop,
        _dir: dir,
    }
}

impl Setup {
    /// Starts a poller that runs until `stop` is sent.
    fn poll(&self) {
        self.poll_into(Arc::new(self.engine.clone()));
    }

    /// The same, handing updates to `sink`.
    fn poll_into(&self, sink: Arc<dyn InboundSink>) {
        let channel = self.channel.clone();
        let mut stopped = self.stop.subscribe();
        tokio::spawn(async move {
            askgate_telegram::polling::run(channel, sink, async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            })
            .await;
        });
    }

    async fn ask(&self, to: &str, request: &str, session: &str) -> QuestionRecord {
        let request = validate_json(request).unwrap();
        let record = self
            .engine
            .ask(NewQuestion {
                nudges: askgate_engine::Nudges::default(),
                callback_url: None,
                agent: "agent".into(),
                to: to.into(),
                session_id: Some(session.into()),
                run_id: None,
                session_kind: SessionKind::Main,
                request,
                idempotency_key: None,
            })
            .await
            .unwrap();
        tokio::time::timeout(PATIENCE, async {
            loop {
                let current = self.engine.get(&record.id).await.unwrap().unwrap();
                if current.delivery().is_some() || current.status.is_final() {
                    return current;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the question is delivered")
    }

    async fn ended(&self, record: &QuestionRecord) -> QuestionRecord {
        tokio::time::timeout(PATIENCE, self.engine.wait(&record.id, Duration::from_secs(60)))
            .await
            .unwrap()
            .unwrap()
    }

    async fn calls(&self, method: &str, count: usize) -> Vec<Value> {
        let calls = self
            .fake
            .wait_for_call(method, count, PATIENCE)
            .await
            .unwrap_or_else(|error| panic!("{error}"));
        calls.into_iter().map(|call| call.body).collect()
    }

    /// Alice taps a button of the question's message in her private chat.
    fn alice_taps(&self, record: &QuestionRecord, action: &str) -> Value {
        self.fake.tap(
            &alice(),
            &TgChat::private(ALICE),
            message_id(record),
            &token(record, action),
        )
    }
}

fn message_id(record: &QuestionRecord) -> i64 {
    record.delivery().unwrap().messages[0].message.parse().unwrap()
}

fn token(record: &QuestionRecord, action: &str) -> String {
    format!("ag1:{}:{action}", record.id)
}

const DEPLOY: &str = r#"{"questions":[{"id":"deploy","header":"Deploy","question":"Where should this build go?","options":[
    {"label":"Staging (Recommended)","description":"safe"},{"label":"Production"}]}],"timeoutSeconds":120}"#;

const TWO: &str = r#"{"questions":[
    {"id":"deploy","header":"Deploy","question":"Where?","options":[{"label":"Staging"},{"label":"Production"}]},
    {"id":"notify","header":"Notify","question":"Who?","multiSelect":true,"options":[{"label":"Team"},{"label":"On-call"}]}]}"#;

fn answers(record: &QuestionRecord) -> Value {
    serde_json::to_value(askgate_core::ToolResult::from(
        record.resolution.as_ref().unwrap().answers.as_ref().unwrap(),
    ))
    .unwrap()
}

#[tokio::test]
async fn a_tap_answers_and_the_message_is_edited_into_its_summary() {
    let s = setup().await;
    let record = s.ask("alice", DEPLOY, "s1").await;
    let sent = s.calls("sendMessage", 1).await;
    assert_eq!(sent[0]["chat_id"], json!(ALICE));
    assert_eq!(sent[0]["parse_mode"], json!("HTML"));
    assert_eq!(
        sent[0]["reply_markup"],
        json!({"inline_keyboard": [
            [{"text": "Staging (Recommended)", "callback_data": token(&record, "0")}],
            [{"text": "Production", "callback_data": token(&record, "1")}],
            [{"text": "Other…", "callback_data": token(&record, "o")}, {"text": "Skip", "callback_data": token(&record, "s")}],
        ]})
    );
    assert!(
        sent[0]["text"]
            .as_str()
            .unwrap()
            .contains("Deploy — Where should this build go?")
    );

    s.alice_taps(&record, "1");
    let ended = s.ended(&record).await;
    assert_eq!(
        answers(&ended),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"]}}})
    );
    let acks = s.calls("answerCallbackQuery", 1).await;
    assert_eq!(acks[0]["text"], json!("Answer submitted"));
    let edits = s.calls("editMessageText", 1).await;
    assert_eq!(edits[0]["message_id"], json!(message_id(&record)));
    assert!(
        edits[0]["text"]
            .as_str()
            .unwrap()
            .ends_with("<b>Answered by Alice: Production</b>"),
        "{}",
        edits[0]["text"]
    );
    assert!(
        edits[0]
            .get("reply_markup")
            .is_none_or(|markup| markup["inline_keyboard"].as_array().is_none_or(Vec::is_empty))
    );
}

#[tokio::test]
async fn in_a_group_a_stranger_is_refused_and_changes_nothing() {
    let s = setup().await;
    let record = s.ask("ops", DEPLOY, "s1").await;
    let group = TgChat::group(GROUP, "Ops");
    s.fake.tap(&bob(), &group, message_id(&record), &token(&record, "0"));
    let acks = s.calls("answerCallbackQuery", 1).await;
    assert_eq!(
        (acks[0]["text"].clone(), acks[0]["show_alert"].clone()),
        (json!("This question is for Alice"), json!(true))
    );
    s.fake.message(&bob(), &group, "2", Some(message_id(&record)), None);
    s.calls("sendMessage", 2).await;
    assert_eq!(
        s.engine.get(&record.id).await.unwrap().unwrap().status,
        QuestionStatus::Pending
    );
    // Alice's reply to the question's message answers it.
    s.fake
        .message(&alice(), &group, "production", Some(message_id(&record)), None);
    assert_eq!(
        answers(&s.ended(&record).await)["answers"]["answers"]["deploy"],
        json!(["Production"])
    );
}

#[tokio::test]
async fn a_two_question_prompt_is_answered_over_two_replies() {
    let s = setup().await;
    let record = s.ask("alice", TWO, "s1").await;
    let sent = s.calls("sendMessage", 1).await;
    assert!(sent[0].get("reply_markup").is_none(), "several questions are text");
    let chat = TgChat::private(ALICE);
    s.fake.message(&alice(), &chat, "2: 1, 2", None, None);
    let replies = s.calls("sendMessage", 2).await;
    assert_eq!(replies[1]["text"], json!("Got Notify. Still needed: Deploy"));
    s.fake.message(&alice(), &chat, "staging", None, None);
    assert_eq!(
        answers(&s.ended(&record).await),
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Staging"], "notify": ["Team", "On-call"]}}})
    );
}

#[tokio::test]
async fn other_opens_a_force_reply_whose_reply_is_the_answer() {
    let s = setup().await;
    let record = s.ask("ops", DEPLOY, "s1").await;
    let group = TgChat::group(GROUP, "Ops");
    s.fake.tap(&alice(), &group, message_id(&record), &token(&record, "o"));
    let sent = s.calls("sendMessage", 2).await;
    let force = &sent[1];
    assert_eq!(force["reply_markup"]["force_reply"], json!(true));
    assert_eq!(force["reply_markup"]["selective"], json!(true));
    assert!(
        force["text"]
            .as_str()
            .unwrap()
            .contains(&format!("tg://user?id={ALICE}"))
    );
    let force_id = s.fake.messages()[&GROUP].last().unwrap()["message_id"]
        .as_i64()
        .unwrap();
    // The force-reply is attached to the question right after it is sent.
    let force = askgate_core::channel::MessageRef {
        conversation: GROUP.to_string(),
        message: force_id.to_string(),
    };
    tokio::time::timeout(PATIENCE, async {
        while s
            .engine
            .store()
            .question_for_message("tg", &force)
            .await
            .unwrap()
            .is_none()
        {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the force-reply is attached");
    s.fake
        .message(&alice(), &group, "  only on Friday ", Some(force_id), None);
    assert_eq!(
        answers(&s.ended(&record).await)["answers"]["answers"]["deploy"],
        json!(["only on Friday"])
    );
}

#[tokio::test]
async fn agent_text_arrives_as_literal_text_and_mentions_no_one() {
    let s = setup().await;
    let request = r#"{"questions":[{"id":"q","header":"<b>Hi</b>","question":"Ask @alice about *_[] & <i>this</i>?","options":[{"label":"A"},{"label":"B"}]}]}"#;
    s.ask("alice", request, "s1").await;
    let text = s.calls("sendMessage", 1).await[0]["text"].as_str().unwrap().to_owned();
    assert!(text.contains("&lt;b&gt;Hi&lt;/b&gt;"), "{text}");
    assert!(text.contains("*_[] &amp; &lt;i&gt;this&lt;/i&gt;"), "{text}");
    assert!(text.contains("@\u{2060}alice") && !text.contains("@alice"), "{text}");
}

#[tokio::test]
async fn refusals_resolve_as_delivery_failed_at_once() {
    let s = setup().await;
    for (failure, reason) in [
        (
            Failure::BadRequest("Bad Request: chat not found".into()),
            "chat not found",
        ),
        (
            Failure::Forbidden("Forbidden: bot was blocked by the user".into()),
            "blocked",
        ),
    ] {
        s.fake.fail_next("sendMessage", failure);
        let record = s.ask("alice", DEPLOY, reason).await;
        let ended = s.ended(&record).await;
        assert_eq!(ended.status, QuestionStatus::DeliveryFailed);
        assert!(ended.resolution.unwrap().reason.unwrap().contains(reason));
    }
}

#[tokio::test]
async fn a_bad_token_is_reported_as_such() {
    // A 429 is the shared conformance suite's scenario.
    let s = setup().await;
    let wrong = TelegramChannel::new("tg", "999:wrong-token", Some(s.fake.api_url().parse().unwrap()));
    let refused = wrong.check().await;
    assert_eq!(refused, Err(ChannelError::Unauthorized));
    assert_eq!(s.channel.check().await.as_deref(), Ok("askgate_test_bot"));
}

#[tokio::test]
async fn the_offset_is_saved_after_each_update_and_nothing_is_replayed() {
    let s = setup().await;
    let record = s.ask("alice", DEPLOY, "s1").await;
    let tap = s.alice_taps(&record, "0");
    s.ended(&record).await;
    s.calls("answerCallbackQuery", 1).await;
    let update_id = tap["update_id"].as_i64().unwrap();
    let expected = (update_id + 1).to_string();
    tokio::time::timeout(PATIENCE, async {
        while s.engine.cursor("tg").await.as_deref() != Some(expected.as_str()) {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .expect("the offset is saved");
    // A new poller (a restart) starts after the saved offset: the tap is not applied again.
    s.stop.send(true).unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let _ = s.stop.send(false);
    s.poll();
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(s.fake.calls_to("answerCallbackQuery").len(), 1);
}

const SECRET: &str = "webhook-secret-0123456789abcdefghijklmnop";

async fn post_update(router: &axum::Router, secret: Option<&str>, update: &Value) -> StatusCode {
    let mut request = Request::post("/telegram/tg").header("content-type", "application/json");
    if let Some(secret) = secret {
        request = request.header("X-Telegram-Bot-Api-Secret-Token", secret);
    }
    router
        .clone()
        .oneshot(request.body(Body::from(update.to_string())).unwrap())
        .await
        .unwrap()
        .status()
}

#[tokio::test]
async fn a_webhook_takes_updates_only_with_its_secret() {
    let s = unpolled().await;
    let sink: Arc<dyn InboundSink> = Arc::new(s.engine.clone());
    let router = askgate_telegram::http::router("/telegram/tg", s.channel.clone(), sink, &[SECRET]);
    let record = s.ask("alice", DEPLOY, "s1").await;
    let tap = s.alice_taps(&record, "1");

    for forged in [None, Some("wrong"), Some("webhook-secret-0123456789abcdefghijklmno")] {
        assert_eq!(
            post_update(&router, forged, &tap).await,
            StatusCode::UNAUTHORIZED,
            "{forged:?}"
        );
    }
    assert_eq!(
        s.engine.get(&record.id).await.unwrap().unwrap().status,
        QuestionStatus::Pending
    );
    assert!(s.fake.calls_to("answerCallbackQuery").is_empty());

    // Telegram hears 200 only once the answer is stored.
    assert_eq!(post_update(&router, Some(SECRET), &tap).await, StatusCode::OK);
    assert_eq!(
        s.engine.get(&record.id).await.unwrap().unwrap().status,
        QuestionStatus::Answered
    );
    assert_eq!(
        s.calls("answerCallbackQuery", 1).await[0]["text"],
        json!("Answer submitted")
    );
    // A redelivery changes nothing.
    assert_eq!(post_update(&router, Some(SECRET), &tap).await, StatusCode::OK);
    assert_eq!(
        answers(&s.ended(&record).await)["answers"]["answers"]["deploy"],
        json!(["Production"])
    );
    // Something that is not an update is acknowledged and ignored.
    assert_eq!(
        post_update(&router, Some(SECRET), &json!({"hello": "world"})).await,
        StatusCode::OK
    );
}

#[tokio::test]
async fn registering_a_webhook_sends_the_secret_and_the_update_kinds() {
    let s = unpolled().await;
    askgate_telegram::http::register(
        &s.channel,
        "https://askgate.example/telegram/tg".parse().unwrap(),
        SECRET,
    )
    .await
    .unwrap();
    let webhook = s.fake.webhook().expect("a webhook is set");
    assert_eq!(webhook.url, "https://askgate.example/telegram/tg");
    assert_eq!(webhook.secret_token.as_deref(), Some(SECRET));
    let calls = s.calls("setWebhook", 1).await;
    assert_eq!(calls[0]["allowed_updates"], json!(["message", "callback_query"]));
}

/// The real engine behind a store that fails the first `failures` events,
/// as a full disk or a locked database would.
struct StoreFailsAtFirst {
    engine: Engine,
    failures: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl InboundSink for StoreFailsAtFirst {
    async fn handle(
        &self,
        channel: &str,
        event: askgate_core::InboundEvent,
    ) -> Result<askgate_core::Reaction, askgate_core::InboundError> {
        let left = self.failures.load(std::sync::atomic::Ordering::SeqCst);
        if left > 0 {
            self.failures.store(left - 1, std::sync::atomic::Ordering::SeqCst);
            return Err(askgate_core::InboundError::Unavailable {
                reason: "disk I/O error".into(),
                notice: "not saved".into(),
            });
        }
        self.engine.handle(channel, event).await
    }

    async fn attach(
        &self,
        channel: &str,
        question: &askgate_core::QuestionId,
        message: askgate_core::channel::MessageRef,
    ) {
        self.engine.attach(channel, question, message).await;
    }

    async fn cursor(&self, channel: &str) -> Option<String> {
        self.engine.cursor(channel).await
    }

    async fn save_cursor(&self, channel: &str, cursor: &str) {
        self.engine.save_cursor(channel, cursor).await;
    }

    fn stranger(
        &self,
        channel: &str,
        destination: &askgate_core::channel::Destination,
    ) -> Option<askgate_core::Locale> {
        self.engine.stranger(channel, destination)
    }
}

#[tokio::test]
async fn an_update_that_could_not_be_stored_is_polled_again_not_skipped() {
    let s = unpolled().await;
    s.poll_into(Arc::new(StoreFailsAtFirst {
        engine: s.engine.clone(),
        failures: 2.into(),
    }));
    let record = s.ask("alice", DEPLOY, "s1").await;
    s.alice_taps(&record, "1");
    // Twice not stored, neither acknowledged nor confirmed; the third time taken.
    let ended = s.ended(&record).await;
    assert_eq!(answers(&ended)["answers"]["answers"]["deploy"], json!(["Production"]));
    let acks = s.calls("answerCallbackQuery", 1).await;
    assert_eq!(acks.len(), 1, "{acks:?}");
    assert_eq!(acks[0]["text"], json!("Answer submitted"));
    let offsets: Vec<Value> = s
        .fake
        .calls_to("getUpdates")
        .iter()
        .map(|call| call.body["offset"].clone())
        .collect();
    assert!(
        offsets.len() >= 3 && offsets[1] == offsets[0] && offsets[2] == offsets[0],
        "the offset did not move past the update until it was stored: {offsets:?}"
    );
}

#[tokio::test]
async fn a_webhook_update_that_could_not_be_stored_gets_an_error_status_for_telegram_to_resend() {
    let s = unpolled().await;
    let sink: Arc<dyn InboundSink> = Arc::new(StoreFailsAtFirst {
        engine: s.engine.clone(),
        failures: 1.into(),
    });
    let router = askgate_telegram::http::router("/telegram/tg", s.channel.clone(), sink, &[SECRET]);
    let record = s.ask("alice", DEPLOY, "s1").await;
    let tap = s.alice_taps(&record, "0");
    assert_eq!(
        post_update(&router, Some(SECRET), &tap).await,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert!(s.fake.calls_to("answerCallbackQuery").is_empty());
    assert_eq!(
        s.engine.get(&record.id).await.unwrap().unwrap().status,
        QuestionStatus::Pending
    );
    assert_eq!(post_update(&router, Some(SECRET), &tap).await, StatusCode::OK);
    assert_eq!(
        answers(&s.ended(&record).await)["answers"]["answers"]["deploy"],
        json!(["Staging (Recommended)"])
    );
}

/// The bot's reply to message `message` in `chat`, once it is sent.
async fn reply_to(fake: &FakeTelegram, chat: i64, message: &Value) -> Value {
    let id = message["message"]["message_id"].clone();
    tokio::time::timeout(PATIENCE, async {
        loop {
            let reply = fake.messages().get(&chat).and_then(|sent| {
                sent.iter()
                    .find(|sent| sent["reply_to_message"]["message_id"] == id && sent["from"]["is_bot"] == json!(true))
                    .cloned()
            });
            if let Some(reply) = reply {
                return reply;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    })
    .await
    .unwrap_or_else(|_| panic!("the bot replied in chat {chat}"))
}

/// What the bot sent, chat by chat, counting only its own messages.
fn bot_messages(fake: &FakeTelegram) -> Vec<(i64, usize)> {
    fake.messages()
        .into_iter()
        .map(|(chat, sent)| (chat, sent.iter().filter(|m| m["from"]["is_bot"] == json!(true)).count()))
        .filter(|(_, count)| *count > 0)
        .collect()
}

#[tokio::test]
async fn a_chat_no_recipient_has_is_told_its_recipient_block_in_that_chat_only() {
    let s = setup().await;
    let intro = Locale::En.chrome().introduce();
    let carol = TgUser::new(1003, "Carol Lee");
    // A private chat: anything said there; the block names the chat.
    let said = s.fake.message(&carol, &TgChat::private(1003), "/start", None, None);
    let reply = reply_to(&s.fake, 1003, &said).await;
    assert_eq!(
        reply["text"],
        format!("{intro}\n[recipients.carol_lee]\nchannel = \"tg\"\ndisplay_name = \"Carol Lee\"\nchat_id = 1003")
    );
    let pre = reply["entities"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["type"] == "pre")
        .unwrap();
    assert_eq!(pre["language"], "toml", "the block is shown as code: {reply}");
    // A group: only a greeting for this bot; the writer is the answerer.
    let design = TgChat::group(-3003, "Design");
    s.fake.message(&carol, &design, "Hello everyone", None, None);
    let said = s.fake.message(&carol, &design, "/start@askgate_test_bot", None, None);
    let reply = reply_to(&s.fake, -3003, &said).await;
    assert_eq!(
        reply["text"],
        format!(
            "{intro}\n[recipients.team]\nchannel = \"tg\"\ndisplay_name = \"Carol Lee\"\nchat_id = -3003\nanswerers = [1003]"
        )
    );
    // A forum topic: its topic id too, and the reply lands in the topic.
    let forum = TgChat::forum(-1_004_004, "Support");
    let said = s.fake.message(&carol, &forum, "/help", None, Some(55));
    let reply = reply_to(&s.fake, -1_004_004, &said).await;
    assert_eq!(
        reply["text"],
        format!(
            "{intro}\n[recipients.team]\nchannel = \"tg\"\ndisplay_name = \"Carol Lee\"\nchat_id = -1004004\ntopic = 55\nanswerers = [1003]"
        )
    );
    assert_eq!(reply["message_thread_id"], 55);
    // A recipient's own chat is not introduced: Alice hears there is nothing to answer.
    let said = s.fake.message(&alice(), &TgChat::private(ALICE), "/start", None, None);
    let reply = reply_to(&s.fake, ALICE, &said).await;
    assert_eq!(reply["text"], Locale::En.chrome().nothing_pending());
    // One message to each chat that wrote, none anywhere else (not in
    // reply to "Hello everyone", not in the configured group).
    assert_eq!(
        bot_messages(&s.fake),
        [(-1_004_004, 1), (-3003, 1), (ALICE, 1), (1003, 1)]
    );
}

/// A 5xx from the Bot API is Telegram failing, not refusing: retried (it
/// was a refusal for good, teloxide reading the error's JSON as an API
/// error), with a short reason naming the status.
#[tokio::test]
async fn a_5xx_from_telegram_is_a_passing_failure_not_a_refusal() {
    let fake = FakeTelegram::start().await;
    let channel = TelegramChannel::new("tg", fake.token(), Some(fake.api_url().parse().unwrap()));
    fake.fail_next("getMe", Failure::ServerError);
    // teloxide waits 10 s after any 5xx before it reads the answer.
    let failed = tokio::time::timeout(Duration::from_secs(30), channel.check())
        .await
        .unwrap();
    match failed {
        Err(error @ ChannelError::Unavailable { .. }) => {
            let said = error.to_string();
            assert!(
                said.contains("Telegram answered HTTP 500") && said.len() < 400,
                "{said}"
            );
        }
        other => panic!("a 500 is retryable: {other:?}"),
    }
    assert_eq!(channel.check().await.as_deref(), Ok("askgate_test_bot"));
}
