//! Answering from any surface, end to end: the real binary, a recipient on
//! the fake Telegram and on askgate's page (open in headless Chromium). One
//! question shows on both; the first answer wins wherever it is given; the
//! waiting agent gets the exact result; every copy ends in the summary that
//! names where it was answered, live; a late tap elsewhere is told it is over.
//! And a crash between the answer and the last copy's edit: the edit
//! happens after the restart, the answer counted once.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use askgate_testkit::telegram::{Failure, FakeTelegram, TgChat, TgUser};
use serde_json::{Value, json};
use support::browser::Page;
use support::chat::{answered, deploy, eventually_within, two_questions};
use support::{AGENT_TOKEN, Server};

/// Alice's user id, which is also her private chat's id.
const ALICE: i64 = 4242;
/// Alice's page key.
const ALICE_KEY: &str = "svc-test-web-key-alice-0123456789abcdefghijklm";
/// How long a step may take before the test fails.
const PATIENCE: Duration = Duration::from_secs(20);

fn alice() -> TgUser {
    TgUser::new(ALICE, "Alice")
}

fn dm() -> TgChat {
    TgChat::private(ALICE)
}

/// The fake Bot API, and askgate with Alice on Telegram and on her page.
async fn start() -> (FakeTelegram, Server) {
    support::chat::alice_on_telegram_and_page(ALICE, ALICE_KEY).await
}

/// The `message_id` of the bot's message with question `id`'s buttons.
async fn buttons_of(fake: &FakeTelegram, id: &str) -> i64 {
    let shown = eventually_within(&format!("the buttons of {id} in Telegram"), PATIENCE, || {
        fake.messages().get(&ALICE).and_then(|sent| {
            sent.iter()
                .find(|message| message["reply_markup"].to_string().contains(id))
                .cloned()
        })
    })
    .await;
    shown["message_id"].as_i64().unwrap()
}

/// The Telegram message once its text contains `summary`; its keyboard gone.
async fn edited_into(fake: &FakeTelegram, message_id: i64, summary: &str) -> Value {
    let message = eventually_within(
        &format!("message {message_id} edited into {summary:?}"),
        PATIENCE,
        || {
            fake.stored_message(ALICE, message_id)
                .filter(|message| message["text"].as_str().is_some_and(|text| text.contains(summary)))
        },
    )
    .await;
    assert!(
        message["reply_markup"]["inline_keyboard"]
            .as_array()
            .is_none_or(Vec::is_empty),
        "the edit removed the buttons: {message}"
    );
    message
}

/// The `answerCallbackQuery` text for the tap in `update`.
async fn answer_to(fake: &FakeTelegram, update: &Value) -> String {
    let id = update["callback_query"]["id"].clone();
    let answer = eventually_within("the tap's answerCallbackQuery", PATIENCE, || {
        fake.calls_to("answerCallbackQuery")
            .into_iter()
            .map(|call| call.body)
            .find(|body| body["callback_query_id"] == id)
    })
    .await;
    answer["text"].as_str().unwrap_or_default().to_owned()
}

/// A blocking browser step, off the runtime's async work (the fake Bot API
/// runs on this runtime meanwhile).
fn on_page<T>(step: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(step)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_question_shows_on_telegram_and_the_page_and_is_answered_on_either() {
    let (fake, server) = start().await;
    let link = server.url(&format!("/web/{ALICE_KEY}"));
    let mut page = on_page(|| Page::open(&link));

    // Tapped on the page: the agent's wait ends with the exact result, the
    // Telegram message turns into the summary naming the page, and a late
    // tap in Telegram is told the question was answered.
    let mut asked = server.ask_waiting(&deploy("alice")).await;
    let message = buttons_of(&fake, &asked.id).await;
    let labels = on_page(|| page.card(&asked.id));
    assert_eq!(labels, ["Staging (Recommended)", "Production"]);
    on_page(|| page.tap(&asked.id, "Production"));
    on_page(|| page.press(&asked.id, "submit"));
    assert_eq!(asked.result(PATIENCE).await, answered("Production"));
    edited_into(&fake, message, "Answered by Alice in the web page: Production").await;
    let summary = on_page(|| page.summary(&asked.id));
    assert_eq!(summary, "Answered by Alice in the web page: Production");
    let late = fake.tap(&alice(), &dm(), message, &format!("ag1:{}:0", asked.id));
    assert_eq!(answer_to(&fake, &late).await, "This question was already answered");
    let resource = server.question(&asked.id).await;
    assert_eq!(
        resource["result"],
        answered("Production"),
        "the late tap changed nothing"
    );
    assert_eq!(resource["resolution"]["surface"], "web");
    let deliveries: Vec<(Value, Value, Value)> = resource["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["surface"].clone(), d["channel"].clone(), d["status"].clone()))
        .collect();
    assert_eq!(
        deliveries,
        [
            (json!("telegram"), json!("tg"), json!("delivered")),
            (json!("web"), json!("web"), json!("delivered")),
        ]
    );
    assert_eq!(
        resource["deliveries"][0]["messages"],
        json!([{"conversation": ALICE.to_string(), "message": message.to_string()}])
    );

    // Tapped in Telegram: the page's card turns into its summary live.
    let mut asked = server.ask_waiting(&deploy("alice")).await;
    let message = buttons_of(&fake, &asked.id).await;
    on_page(|| page.card(&asked.id));
    let tap = fake.tap(&alice(), &dm(), message, &format!("ag1:{}:0", asked.id));
    assert_eq!(answer_to(&fake, &tap).await, "Answer submitted");
    assert_eq!(asked.result(PATIENCE).await, answered("Staging (Recommended)"));
    let summary = on_page(|| page.summary(&asked.id));
    assert_eq!(summary, "Answered by Alice in Telegram: Staging (Recommended)");
    edited_into(&fake, message, "Answered by Alice in Telegram: Staging (Recommended)").await;
    let resource = server.question(&asked.id).await;
    assert_eq!(resource["resolution"]["surface"], "telegram");
    assert_eq!(resource["resolution"]["via"], "tg");

    // Begun in Telegram, finished on the page: the reply there answers
    // Notify and says Deploy is missing; the page shows Notify done, opens
    // on Deploy, and its Submit ends the prompt with both.
    let mut asked = server.ask_waiting(&two_questions("alice")).await;
    let prompt = eventually_within("the two-question prompt in Telegram", PATIENCE, || {
        fake.messages().get(&ALICE).and_then(|sent| {
            sent.iter()
                .find(|message| {
                    message["text"]
                        .as_str()
                        .is_some_and(|text| text.contains("Who should be told?"))
                })
                .and_then(|message| message["message_id"].as_i64())
        })
    })
    .await;
    let reply = fake.message(&alice(), &dm(), "2: 1", Some(prompt), None);
    let reply_id = reply["message"]["message_id"].clone();
    let confirmed = eventually_within("askgate's reply to the partial answer", PATIENCE, || {
        fake.calls_to("sendMessage")
            .into_iter()
            .map(|call| call.body)
            .find(|body| body["reply_parameters"]["message_id"] == reply_id)
    })
    .await;
    assert_eq!(confirmed["text"], "Got Notify. Still needed: Deploy");
    let (done, current, header) = on_page(|| page.steps(&asked.id));
    assert_eq!(done, [false, true], "Notify, answered in Telegram, shows as done");
    assert_eq!(
        (current, header.as_str()),
        (Some(0), "Deploy"),
        "the card opens on what is missing"
    );
    on_page(|| page.tap(&asked.id, "Production"));
    on_page(|| page.press(&asked.id, "next"));
    on_page(|| page.press(&asked.id, "submit"));
    assert_eq!(
        asked.result(PATIENCE).await,
        json!({"status": "answered", "answers": {"answers": {"deploy": ["Production"], "notify": ["Team channel"]}}})
    );
    edited_into(
        &fake,
        prompt,
        "Answered by Alice in the web page\nDeploy: Production\nNotify: Team channel",
    )
    .await;
}

/// Killed after the answer was stored, while Telegram's edit was on its way
/// (the fake answers it with a 500, and teloxide waits before it reports
/// one): after the restart the message is edited, the answer is the one
/// given, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_before_a_copy_is_edited_is_made_good_after_the_restart() {
    let (fake, mut server) = start().await;
    let asked = server
        .http()
        .post(server.url("/v1/questions"))
        .bearer_auth(AGENT_TOKEN)
        .json(&deploy("alice"))
        .send()
        .await
        .unwrap();
    assert_eq!(asked.status().as_u16(), 201);
    let id = asked.json::<Value>().await.unwrap()["id"].as_str().unwrap().to_owned();
    let message = buttons_of(&fake, &id).await;

    fake.fail_next("editMessageText", Failure::ServerError);
    let answer = server
        .http()
        .post(server.url(&format!("/web/{ALICE_KEY}/api/questions/{id}/answer")))
        .json(&json!({"answers": {"deploy": {"options": [1]}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status().as_u16(), 200, "{}", answer.text().await.unwrap());
    fake.wait_for_call("editMessageText", 1, PATIENCE).await.unwrap();
    server.kill();
    assert!(
        fake.stored_message(ALICE, message)
            .is_some_and(|m| !m["text"].as_str().unwrap().contains("Answered")),
        "the edit had not happened when askgate died"
    );

    server.restart();
    edited_into(&fake, message, "Answered by Alice in the web page: Production").await;
    let resource = server.question(&id).await;
    assert_eq!(resource["result"], answered("Production"));
    let database = server.data_dir().join("askgate.db");
    let options = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(&database)
        .read_only(true);
    let mut db = <sqlx::SqliteConnection as sqlx::Connection>::connect_with(&options)
        .await
        .unwrap();
    let rows: Vec<(String, String)> = sqlx::query_as("SELECT id, status FROM questions")
        .fetch_all(&mut db)
        .await
        .unwrap();
    assert_eq!(rows, [(id.clone(), "answered".to_owned())], "answered once");
    let edits = fake
        .calls_to("editMessageText")
        .into_iter()
        .filter(|call| call.body["message_id"] == json!(message))
        .count();
    assert_eq!(
        edits, 2,
        "the edit cut short by the crash, and the one after the restart"
    );
}

/// Lead's Slack member id.
const LEAD: &str = "U0LEAD0001";

/// A reminder at half a 60-second wait: a reply to the question's message
/// in Alice's Telegram chat at about 30 s, mentioning her, and the resource
/// says it went out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reminder_replies_to_the_telegram_question_at_half_its_wait() {
    let fake = FakeTelegram::start().await;
    fake.add_chat(&dm());
    let config = format!(
        "\n[channels.tg]\ntype = \"telegram\"\ntoken = \"{token}\"\napi_url = \"{api}\"\n\n\
         [recipients.alice]\ndisplay_name = \"Alice\"\nchannel = \"tg\"\nchat_id = {ALICE}\nremind = [\"50%\"]\n",
        token = fake.token(),
        api = fake.api_url(),
    );
    let server = Server::start_with("", &config);
    let mut body = deploy("alice");
    body["timeoutSeconds"] = json!(60);
    let asked_at = std::time::Instant::now();
    let created = server.create(&body).await;
    let id = created["id"].as_str().unwrap();
    let message = buttons_of(&fake, id).await;
    let reminder = eventually_within("the reminder under the question", Duration::from_secs(50), || {
        fake.replies_to(ALICE, message).into_iter().next()
    })
    .await;
    let after = asked_at.elapsed();
    assert!(
        after >= Duration::from_secs(29) && after <= Duration::from_secs(40),
        "the reminder came {after:?} after the question, not at about 30 s"
    );
    assert!(
        reminder.text.contains("Still waiting for your answer —") && reminder.text.ends_with("s left."),
        "{}",
        reminder.text
    );
    assert_eq!(reminder.mentions, [askgate_testkit::telegram::TgMention::User(ALICE)]);
    let resource = server.question(id).await;
    assert!(resource["reminders"][0]["sentAt"].is_string(), "{resource}");
    assert_eq!(fake.replies_to(ALICE, message).len(), 1, "one reminder, once");
}

/// Alice on Telegram does not answer; five seconds on, the question is
/// escalated to Lead on Slack, who answers there: the agent gets his
/// answer, Alice's copy said it was escalated and ends in the summary
/// naming Lead, and the resource lists the escalation and Lead's delivery.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_escalation_to_slack_is_answered_there_and_the_telegram_copy_says_so() {
    let tg = FakeTelegram::start().await;
    tg.add_chat(&dm());
    let sl = askgate_testkit::slack::FakeSlack::start().await;
    let lead = sl.user(LEAD, "Lead");
    let lead_dm = sl.dm(&lead);
    let config = format!(
        "\n[channels.tg]\ntype = \"telegram\"\ntoken = \"{tg_token}\"\napi_url = \"{tg_api}\"\n\n\
         [channels.sl]\ntype = \"slack\"\nbot_token = \"{sl_token}\"\napi_url = \"{sl_api}\"\nmode = \"socket\"\napp_token = \"{app}\"\n\n\
         [recipients.alice]\ndisplay_name = \"Alice\"\nchannel = \"tg\"\nchat_id = {ALICE}\n\n\
         [recipients.lead]\ndisplay_name = \"Lead\"\nchannel = \"sl\"\nuser_id = \"{LEAD}\"\n",
        tg_token = tg.token(),
        tg_api = tg.api_url(),
        sl_token = sl.bot_token(),
        sl_api = sl.api_url(),
        app = sl.app_token(),
    );
    let server = Server::start_with("", &config);
    let mut body = deploy("alice");
    body["escalate"] = json!([{"after": "5s", "to": "lead"}]);
    let mut asked = server.ask_waiting(&body).await;
    let message = buttons_of(&tg, &asked.id).await;

    let prompt = sl
        .wait_for_message(&lead_dm, PATIENCE, |seen| {
            seen.buttons().iter().any(|button| {
                button["action_id"]
                    .as_str()
                    .is_some_and(|action| action.contains(&asked.id))
            })
        })
        .await
        .unwrap_or_else(|error| panic!("Lead's Slack copy: {error}"));
    let said = eventually_within("the word under Alice's copy", PATIENCE, || {
        tg.replies_to(ALICE, message).into_iter().next()
    })
    .await;
    assert!(said.text.contains("also sent to Lead"), "{}", said.text);
    assert!(said.mentions.is_empty(), "nobody is pinged for it: {:?}", said.mentions);

    sl.click(&lead, &lead_dm, &prompt.ts, &asked.token("1"));
    assert_eq!(asked.result(PATIENCE).await, answered("Production"));
    edited_into(&tg, message, "Answered by Lead in Slack: Production").await;
    sl.wait_for_edit(&lead_dm, &prompt.ts, PATIENCE, |seen| {
        seen.blocks.to_string().contains("Answered by Lead")
    })
    .await
    .unwrap_or_else(|error| panic!("Lead's copy ends in the summary: {error}"));

    let resource = server.question(&asked.id).await;
    assert_eq!(resource["resolution"]["by"]["displayName"], "Lead");
    assert_eq!(resource["answeredBy"], json!({"id": LEAD, "displayName": "Lead"}));
    assert_eq!(resource["escalations"][0]["to"], "lead");
    assert!(resource["escalations"][0]["escalatedAt"].is_string(), "{resource}");
    let deliveries: Vec<(Value, Value, Value)> = resource["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| (d["channel"].clone(), d["recipient"].clone(), d["status"].clone()))
        .collect();
    assert_eq!(
        deliveries,
        [
            (json!("tg"), Value::Null, json!("delivered")),
            (json!("sl"), json!("lead"), json!("delivered")),
        ]
    );
}
