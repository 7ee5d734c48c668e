//! The real binary with a Telegram channel, against the testkit's fake Bot
//! API on loopback: what only a whole process shows. In both inbound modes
//! — askgate long-polling the fake (`polling::…`), and the fake calling
//! askgate's webhook the way Telegram does (`webhook::…`) — a tap answering
//! the waiting agent through the configured binary, a `kill -9` between the
//! tap and the edit, and a forum topic; then, in one mode, the webhook's 401
//! to a forged secret through the real server, a refusal's reason on the
//! resource, `askgate ask`'s and `check-config`'s exit codes and words, and
//! a burst paced through the process.
//!
//! What a person does in Telegram (typed replies, Other…, strangers, a
//! second tap, Skip) is the conformance suite's, run in both modes by
//! `crates/askgate-telegram/tests/telegram/conformance.rs`; expiry and
//! cancellation are the engine suite's.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::{Duration, Instant};

use askgate_testkit::telegram::{Failure, FakeTelegram, TgChat, TgUser};
use serde_json::{Value, json};
use support::chat::{Refused, check_config_and_serve, deploy, eventually_within, in_modes};
use support::{AGENT_TOKEN, Asked, Server};

/// Alice's user id, which is also her private chat's id.
const ALICE: i64 = 4242;
const BOB: i64 = 4343;
/// A basic group where Alice (only she) answers for the recipient "ops".
const GROUP: i64 = -4_012_345_678;
const WEBHOOK_SECRET: &str = "e2e-webhook-secret-0123456789abcdefghijkl";
/// What askgate tells Telegram its public address is; the fake maps it to
/// the test's loopback port, as a reverse proxy would.
const PUBLIC_URL: &str = "https://askgate.test";
/// How long a step may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(20);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Polling,
    Webhook,
}

fn alice() -> TgUser {
    TgUser::new(ALICE, "Alice")
}

fn bob() -> TgUser {
    TgUser::new(BOB, "Bob")
}

fn dm() -> TgChat {
    TgChat::private(ALICE)
}

fn group() -> TgChat {
    TgChat::group(GROUP, "Release team")
}

/// A forum (a supergroup with topics) where the recipient "release" is one topic.
const FORUM: i64 = -1_001_987_654_321;

fn forum() -> TgChat {
    TgChat::forum(FORUM, "Releases")
}

/// The channel `tg` in `mode`, and three recipients: Alice in her private
/// chat, "ops" in a group (Alice answers), "release" in a forum topic.
fn telegram_config(fake: &FakeTelegram, mode: Mode, topic: i64) -> String {
    let mode = match mode {
        Mode::Polling => String::new(),
        Mode::Webhook => format!("mode = \"webhook\"\nsecret_token = \"{WEBHOOK_SECRET}\"\n"),
    };
    format!(
        "\n[channels.tg]\ntype = \"telegram\"\ntoken = \"{token}\"\napi_url = \"{api}\"\n{mode}\n\
         [recipients.alice]\nchannel = \"tg\"\nchat_id = {ALICE}\ndisplay_name = \"Alice\"\n\n\
         [recipients.ops]\nchannel = \"tg\"\nchat_id = {GROUP}\nanswerers = [{ALICE}]\ndisplay_name = \"Ops\"\n\n\
         [recipients.release]\nchannel = \"tg\"\nchat_id = {FORUM}\ntopic = {topic}\nanswerers = [{ALICE}]\n",
        token = fake.token(),
        api = fake.api_url(),
    )
}

/// The fake Bot API and askgate running against it in one mode.
struct Telegram {
    fake: FakeTelegram,
    server: Server,
    mode: Mode,
    /// The forum topic of recipient "release".
    topic: i64,
}

impl Telegram {
    async fn start(mode: Mode) -> Self {
        let fake = FakeTelegram::start().await;
        fake.add_chat(&dm());
        fake.add_chat(&group());
        let topic = fake.create_topic(&forum(), "Release 1.4");
        let server_keys = match mode {
            Mode::Polling => String::new(),
            Mode::Webhook => format!("public_url = \"{PUBLIC_URL}\""),
        };
        let server = Server::start_with(&server_keys, &telegram_config(&fake, mode, topic));
        let telegram = Self {
            fake,
            server,
            mode,
            topic,
        };
        telegram.route_webhook();
        if mode == Mode::Webhook {
            let webhook = eventually("askgate sets its webhook at start", || telegram.fake.webhook()).await;
            assert_eq!(webhook.url, format!("{PUBLIC_URL}/telegram/tg"));
            assert_eq!(webhook.secret_token.as_deref(), Some(WEBHOOK_SECRET));
        }
        telegram
    }

    /// In webhook mode, points the fake's deliveries at askgate's current port.
    fn route_webhook(&self) {
        if self.mode == Mode::Webhook {
            self.fake.deliver_webhooks_to(self.server.base());
        }
    }

    /// `POST /v1/ask`, answered in the background.
    async fn ask(&self, body: &Value) -> Asked {
        self.server.ask_waiting(body).await
    }

    /// The message of question `id` with buttons, once the fake has it: its
    /// `message_id`.
    async fn buttons_of(&self, chat: i64, id: &str) -> i64 {
        let shown = self
            .bot_message(&format!("the buttons of {id}"), chat, |message| {
                message["reply_markup"].to_string().contains(id)
            })
            .await;
        shown["message_id"].as_i64().unwrap()
    }

    /// The first message the bot sent to `chat` that `matches`, as it is now.
    async fn bot_message(&self, what: &str, chat: i64, matches: impl Fn(&Value) -> bool) -> Value {
        eventually(what, || {
            self.fake
                .messages()
                .get(&chat)
                .and_then(|sent| sent.iter().find(|message| matches(message)).cloned())
        })
        .await
    }

    /// The `sendMessage` that replied to the person's message `message_id`.
    async fn reply_to(&self, message_id: i64) -> Value {
        eventually(&format!("a reply to message {message_id}"), || {
            self.replies_to(message_id).into_iter().next()
        })
        .await
    }

    fn replies_to(&self, message_id: i64) -> Vec<Value> {
        self.fake
            .calls_to("sendMessage")
            .into_iter()
            .map(|call| call.body)
            .filter(|body| body["reply_parameters"]["message_id"] == json!(message_id))
            .collect()
    }

    /// The `answerCallbackQuery` for the tap in `update`.
    async fn answer_to(&self, update: &Value) -> Value {
        let id = update["callback_query"]["id"].clone();
        eventually("the tap's answerCallbackQuery", || {
            self.fake
                .calls_to("answerCallbackQuery")
                .into_iter()
                .map(|call| call.body)
                .find(|body| body["callback_query_id"] == id)
        })
        .await
    }

    /// The message as the chat shows it once its text contains `summary`.
    async fn edited_into(&self, chat: i64, message_id: i64, summary: &str) -> Value {
        eventually(&format!("message {message_id} edited into {summary:?}"), || {
            self.fake
                .stored_message(chat, message_id)
                .filter(|message| message["text"].as_str().is_some_and(|text| text.contains(summary)))
        })
        .await
    }

    async fn status(&self, id: &str) -> Value {
        self.server.question(id).await["status"].clone()
    }

    /// Returns once the reply to `marker`, a later message in the same chat,
    /// has been sent: updates are handled in order and a chat's reactions go
    /// out in that order (in both modes), so every earlier update of that
    /// chat has had its reaction, if it had one.
    async fn settled(&self, marker: &Value) {
        self.reply_to(text_of(marker)).await;
    }

    /// Neither the bot token nor the webhook secret is in askgate's log.
    fn assert_no_secret_logged(&mut self) {
        let log = self.server.stderr();
        assert!(log.contains("askgate is serving"), "the log is read: {log}");
        let token_secret = self.fake.token().split_once(':').unwrap().1;
        assert!(!log.contains(token_secret), "the bot token is in the log:\n{log}");
        assert!(
            !log.contains(WEBHOOK_SECRET),
            "the webhook secret is in the log:\n{log}"
        );
    }
}

fn text_of(update: &Value) -> i64 {
    update["message"]["message_id"].as_i64().unwrap()
}

/// What `probe` finds, once it finds something (the fake records a call
/// before it has applied it).
async fn eventually<T>(what: &str, probe: impl Fn() -> Option<T>) -> T {
    eventually_within(what, PATIENCE, probe).await
}

// ---------------------------------------------------------------------------
// Scenarios, each run in both modes.

/// Ask over HTTP → the keyboard (exact JSON) → a tap → the waiting agent
/// gets the exact result, the tap is acknowledged, the message is edited.
async fn a_tap_answers_the_waiting_agent_and_edits_the_message(mode: Mode) {
    let mut tg = Telegram::start(mode).await;
    let mut asked = tg.ask(&deploy("alice")).await;
    let message = tg.buttons_of(ALICE, &asked.id).await;
    let sent = tg.fake.calls_to("sendMessage")[0].body.clone();
    let token = |action: &str| format!("ag1:{}:{action}", asked.id);
    assert_eq!(
        sent["reply_markup"],
        json!({"inline_keyboard": [
            [{"text": "Staging (Recommended)", "callback_data": token("0")}],
            [{"text": "Production", "callback_data": token("1")}],
            [{"text": "Other…", "callback_data": token("o")}, {"text": "Skip", "callback_data": token("s")}],
        ]}),
        "{sent}"
    );
    assert_eq!(sent["chat_id"], json!(ALICE));
    assert_eq!(sent["parse_mode"], json!("HTML"));
    let shown = tg.fake.stored_message(ALICE, message).unwrap();
    let text = shown["text"].as_str().unwrap();
    assert!(
        text.contains("Where should this build go?") && text.contains("safe, resets nightly"),
        "{text}"
    );

    let tap = tg.fake.tap(&alice(), &dm(), message, &token("1"));
    assert_eq!(
        asked.result(PATIENCE).await,
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"]}}})
    );
    assert_eq!(tg.answer_to(&tap).await["text"], json!("Answer submitted"));
    let edited = tg.edited_into(ALICE, message, "Answered by Alice: Production").await;
    assert!(edited.get("reply_markup").is_none(), "the buttons are gone: {edited}");
    assert!(
        edited["text"].as_str().unwrap().contains("Where should this build go?"),
        "the question stays: {edited}"
    );
    tg.assert_no_secret_logged();
}

/// askgate is killed (`SIGKILL`) after it stored the answer and before the
/// edit reached Telegram: after a restart the message is edited, and the
/// tap was taken once.
async fn a_kill_between_the_tap_and_the_edit_loses_nothing_and_answers_once(mode: Mode) {
    let mut tg = Telegram::start(mode).await;
    let created = tg.server.create(&deploy("alice")).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let message = tg.buttons_of(ALICE, &id).await;
    // The edit after the answer never reaches Telegram, and askgate dies right then.
    // (Three times: askgate tries again after half a second, and the kill
    // must come before an edit gets through; after the restart the rest
    // fail too, and the edit is tried until it does.)
    for _ in 0..3 {
        tg.fake.fail_next("editMessageText", Failure::Disconnect);
    }
    tg.fake.tap(&alice(), &dm(), message, &format!("ag1:{id}:1"));
    tg.server.question_with_status(&id, "answered", PATIENCE).await;
    tg.fake.wait_for_call("editMessageText", 1, PATIENCE).await.unwrap();
    tg.assert_no_secret_logged();
    tg.server.kill();

    tg.server.restart();
    tg.route_webhook();
    let edited = tg.edited_into(ALICE, message, "Answered by Alice: Production").await;
    assert!(edited.get("reply_markup").is_none(), "the buttons are gone: {edited}");
    assert_eq!(
        tg.server.question(&id).await["result"],
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"]}}})
    );
    // If askgate died before Telegram heard the tap was taken, Telegram
    // delivers it again: it is recognised and only acknowledged again. A
    // later update is handled after it, so once that one is answered the
    // redelivery (if any) has been seen.
    tg.settled(&tg.fake.message(&alice(), &dm(), "anything else?", None, None))
        .await;
    let submitted = tg
        .fake
        .calls_to("answerCallbackQuery")
        .iter()
        .filter(|ack| ack.body["text"] == json!("Answer submitted"))
        .count();
    assert_eq!(submitted, 1);
    tg.assert_no_secret_logged();
}

/// A recipient in a forum topic gets its questions in that topic; a reply
/// in the topic to the question answers it, a message merely in the topic
/// does not.
async fn a_forum_topic_recipient_is_asked_and_answered_in_its_topic(mode: Mode) {
    let tg = Telegram::start(mode).await;
    let mut asked = tg.ask(&deploy("release")).await;
    let message = tg.buttons_of(FORUM, &asked.id).await;
    let sent = tg.fake.calls_to("sendMessage")[0].body.clone();
    assert_eq!(sent["message_thread_id"], json!(tg.topic), "{sent}");
    let shown = tg.fake.stored_message(FORUM, message).unwrap();
    assert_eq!(shown["message_thread_id"], json!(tg.topic), "{shown}");

    let in_topic = tg.fake.message(&alice(), &forum(), "2", None, Some(tg.topic));
    let reply = tg.fake.message(&alice(), &forum(), "2", Some(message), Some(tg.topic));
    assert_eq!(
        asked.result(PATIENCE).await,
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"]}}})
    );
    tg.edited_into(FORUM, message, "Answered by Alice: Production").await;
    tg.settled(&tg.fake.message(&bob(), &forum(), "me?", Some(message), Some(tg.topic)))
        .await;
    assert!(tg.replies_to(text_of(&in_topic)).is_empty());
    assert!(
        tg.replies_to(text_of(&reply)).is_empty(),
        "an answer is shown by the edit alone"
    );
}

in_modes!(
    [
    a_tap_answers_the_waiting_agent_and_edits_the_message,
    a_kill_between_the_tap_and_the_edit_loses_nothing_and_answers_once,
    a_forum_topic_recipient_is_asked_and_answered_in_its_topic,
    ]
    polling => Polling, webhook => Webhook
);

// ---------------------------------------------------------------------------
// One mode only.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn a_forged_webhook_secret_gets_401_and_changes_nothing() {
    let fake = FakeTelegram::start().await;
    fake.add_chat(&dm());
    let server = Server::start_with(
        &format!("public_url = \"{PUBLIC_URL}\""),
        &telegram_config(&fake, Mode::Webhook, 1),
    );
    eventually("askgate sets its webhook at start", || fake.webhook()).await;
    let created = server.create(&deploy("alice")).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let token = format!("ag1:{id}:1");
    let message = eventually("the prompt", || {
        fake.messages().get(&ALICE).and_then(|sent| sent.first().cloned())
    })
    .await["message_id"]
        .as_i64()
        .unwrap();
    // Not routed yet: the tap waits in the fake while forgeries are tried.
    let update = fake.tap(&alice(), &dm(), message, &token);
    for secret in [None, Some("forged-secret"), Some(&WEBHOOK_SECRET[1..])] {
        let mut post = server.http().post(server.url("/telegram/tg")).json(&update);
        if let Some(secret) = secret {
            post = post.header("X-Telegram-Bot-Api-Secret-Token", secret);
        }
        assert_eq!(post.send().await.unwrap().status().as_u16(), 401, "{secret:?}");
    }
    assert_eq!(server.question(&id).await["status"], json!("pending"));
    assert!(fake.calls_to("answerCallbackQuery").is_empty());

    fake.deliver_webhooks_to(server.base());
    let resource = server.question_with_status(&id, "answered", PATIENCE).await;
    assert_eq!(
        resource["result"],
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"]}}})
    );
}

/// Telegram refuses for good ("chat not found", "bot was blocked by the
/// user", a token revoked while askgate runs): the waiting agent hears
/// `delivery_failed` at once, and the resource says why.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn a_refused_chat_is_delivery_failed_at_once_with_the_reason() {
    let tg = Telegram::start(Mode::Polling).await;
    for (refusal, expected) in [
        (
            Failure::BadRequest("Bad Request: chat not found".into()),
            "chat not found",
        ),
        (
            Failure::Forbidden("Forbidden: bot was blocked by the user".into()),
            "blocked",
        ),
        (
            Failure::OkFalse {
                code: 401,
                description: "Unauthorized".into(),
            },
            "credentials",
        ),
    ] {
        tg.fake.fail_next("sendMessage", refusal);
        let started = Instant::now();
        let mut asked = tg.ask(&deploy("alice")).await;
        assert_eq!(asked.result(PATIENCE).await, json!({"status": "delivery_failed"}));
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "not waited out: {:?}",
            started.elapsed()
        );
        let resource = tg.server.question(&asked.id).await;
        assert_eq!(resource["status"], json!("delivery_failed"));
        let reason = resource["resolution"]["reason"].as_str().unwrap();
        assert!(reason.contains(expected), "{reason}");
        assert!(!reason.contains(tg.fake.token()), "{reason}");
    }
}

/// `askgate ask` to a recipient Telegram refuses exits 4, the result on stdout.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the command runs.
async fn the_ask_command_exits_4_when_delivery_fails() {
    let tg = Telegram::start(Mode::Polling).await;
    tg.fake
        .fail_next("sendMessage", Failure::BadRequest("Bad Request: chat not found".into()));
    let prompt = tg.server.data_dir().join("prompt.json");
    std::fs::write(&prompt, deploy("alice").to_string()).unwrap();
    let command = support::ask_command(tg.server.base(), &["--token", AGENT_TOKEN], &prompt);
    let ended = support::AskEnded::of(command, PATIENCE).await;
    assert_eq!(ended.json_with_code(4), json!({"status": "delivery_failed"}));
    assert!(ended.stderr.contains("asked alice (question "), "{ended:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the command runs.
async fn a_wrong_bot_token_fails_check_config_and_leaves_the_channel_refused_without_showing_it() {
    let fake = FakeTelegram::start().await;
    let wrong = "999999:wrong-token-never-shown";
    let channel = telegram_config(&fake, Mode::Polling, 1).replace(fake.token(), wrong);
    for refused in check_config_and_serve("", &channel).await {
        refused.assert_refused();
        let Refused { command, printed, .. } = refused;
        assert!(
            printed.contains("channels.tg"),
            "{command} names the channel: {printed}"
        );
        assert!(
            !printed.contains("wrong-token-never-shown"),
            "{command} shows the token: {printed}"
        );
    }
}

/// `check-config` says what Telegram answered (the bot's name) and how to
/// find a chat's ids: by writing to the bot.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the command runs.
async fn check_config_names_the_bot_and_how_to_find_chat_ids() {
    let fake = FakeTelegram::start().await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("askgate.toml");
    std::fs::write(
        &config,
        support::config_text_with(dir.path(), "") + telegram_config(&fake, Mode::Polling, 1).as_str(),
    )
    .unwrap();
    let output = tokio::process::Command::new(support::ASKGATE)
        .arg("check-config")
        .arg(&config)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "{stdout}");
    let lines: Vec<&str> = stdout.lines().collect();
    assert!(
        lines.contains(
            &format!(
                "telegram channel \"tg\": bot @{}, polling",
                askgate_testkit::telegram::BOT_USERNAME
            )
            .as_str()
        ),
        "{stdout}"
    );
    assert!(
        lines
            .iter()
            .any(|line| line.starts_with("to find a chat's ids, write to the bot from that chat")),
        "{stdout}"
    );
    assert!(lines.last().is_some_and(|line| line.starts_with("ok:")), "{stdout}");
}

/// 100 questions to one chat at once: every one is delivered, none faster
/// than Telegram allows in one chat (one a second, 20 a minute), and
/// meanwhile everyone else is served as usual: a question to a group goes
/// out, and a message from someone else is answered, at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)] // The fake must answer while the harness blocks on start-up.
async fn a_burst_of_100_questions_to_one_chat_is_paced_and_all_delivered() {
    const BURST: usize = 100;
    let tg = Telegram::start(Mode::Polling).await;
    let mut ids = Vec::with_capacity(BURST);
    for _ in 0..BURST {
        let created = tg.server.create(&deploy("alice")).await;
        ids.push(created["id"].as_str().unwrap().to_owned());
    }
    // Alice's chat is now backed up for minutes; her own message's reply
    // waits its turn there.
    let sticker = tg.fake.sticker(&alice(), &dm(), None);
    let others = Instant::now();
    let to_ops = tg.server.create(&deploy("ops")).await;
    tg.buttons_of(GROUP, to_ops["id"].as_str().unwrap()).await;
    // Bob is no recipient: he is told how to become one, at once.
    let hello = tg.fake.message(&bob(), &TgChat::private(BOB), "hello?", None, None);
    let reply = tg.reply_to(text_of(&hello)).await;
    assert!(
        reply["text"]
            .as_str()
            .is_some_and(|text| text.starts_with(askgate_core::Locale::En.chrome().introduce())
                && text.contains(&format!("chat_id = {BOB}"))),
        "{reply}"
    );
    assert!(
        others.elapsed() < Duration::from_secs(10),
        "other chats waited {:?} behind the burst",
        others.elapsed()
    );

    // 20 a minute: the 100th can go out a little after four minutes.
    let shown = eventually_within("every prompt stored", Duration::from_secs(6 * 60), || {
        tg.fake.messages().get(&ALICE).cloned().filter(|sent| {
            sent.iter()
                .filter(|message| message.get("reply_markup").is_some())
                .count()
                == BURST
        })
    })
    .await;
    let prompts: Vec<&Value> = shown
        .iter()
        .filter(|message| message.get("reply_markup").is_some())
        .collect();
    let mut delivered: Vec<String> = prompts
        .iter()
        .map(|message| {
            let data = message["reply_markup"]["inline_keyboard"][0][0]["callback_data"]
                .as_str()
                .unwrap();
            data.split(':').nth(1).unwrap().to_owned()
        })
        .collect();
    delivered.sort();
    ids.sort();
    assert_eq!(delivered, ids, "each question delivered exactly once");

    // The reply to her sticker went out too, in its turn: after the prompts
    // that were already waiting, so a minute's quota after the last of them.
    let sticker_id = text_of(&sticker);
    eventually_within("the reply to the sticker", Duration::from_secs(2 * 60), || {
        tg.replies_to(sticker_id).into_iter().next()
    })
    .await;
    let times = tg.fake.send_times(ALICE);
    assert_eq!(times.len(), BURST + 1);
    // The fake times each message when it arrives, a loopback hop after the
    // queue let it go: a busy machine can delay one hop more than the next.
    // A queue that ignored the limits would send many a second, far past
    // this margin.
    let jitter = Duration::from_millis(400);
    for pair in times.windows(2) {
        let gap = pair[1].duration_since(pair[0]);
        assert!(gap + jitter >= Duration::from_secs(1), "two messages {gap:?} apart");
    }
    for window in times.windows(21) {
        let span = window[20].duration_since(window[0]);
        assert!(span + jitter >= Duration::from_secs(60), "21 messages within {span:?}");
    }
    for id in &ids {
        assert_eq!(tg.status(id).await, json!("pending"), "{id}");
    }
}
