//! Page links are people's, end to end: the real binary, a group on the
//! fake Telegram whose `people` are Alice and Bob, each of them with their
//! own page open in headless Chromium. Both see the group's question; Alice
//! answers on her page; the agent's result, Bob's page and the Telegram
//! message all name Alice. A link that is no one's opens nothing; a link
//! rotated with `askgate link rotate` stops working at the reload and the
//! new one works; each person's page shows their questions only; and
//! `/link` in Alice's private chat is answered there with her link, with
//! no preview.
// Helpers panic on purpose: a panic is how a test reports a failure.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::time::Duration;

use askgate_testkit::telegram::{FakeTelegram, TgChat, TgUser};
use serde_json::{Value, json};
use support::Server;
use support::browser::Page;
use support::chat::{answered, deploy, eventually_within};

const ALICE: i64 = 4242;
const BOB: i64 = 4343;
const OPS: i64 = -100_777;
const BOB_KEY: &str = "svc-test-web-key-bob-0123456789abcdefghijklmno";
const CAROL_KEY: &str = "svc-test-web-key-carol-0123456789abcdefghijklm";
const PATIENCE: Duration = Duration::from_secs(20);

fn on_page<T>(step: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(step)
}

/// The fake Bot API, and askgate with the group `ops` (answered in
/// Telegram by Alice and Bob, and on the page by both, each on their own
/// link), Alice and Bob in private chats, and Carol on the page alone.
/// Alice's key is generated (kept in the data directory), so that it can
/// be rotated; Bob's and Carol's are configured.
async fn start() -> (FakeTelegram, Server) {
    let fake = FakeTelegram::start().await;
    for chat in [TgChat::private(ALICE), TgChat::private(BOB), TgChat::group(OPS, "Ops")] {
        fake.add_chat(&chat);
    }
    let config = format!(
        "\n[channels.tg]\ntype = \"telegram\"\ntoken = \"{token}\"\napi_url = \"{api}\"\n\n\
         [recipients.alice]\ndisplay_name = \"Alice\"\nchannel = \"tg\"\nchat_id = {ALICE}\n\
         [recipients.bob]\ndisplay_name = \"Bob\"\nchannel = \"tg\"\nchat_id = {BOB}\nweb_key = \"{BOB_KEY}\"\n\
         [recipients.carol]\ndisplay_name = \"Carol\"\nchannel = \"web\"\nweb_key = \"{CAROL_KEY}\"\n\
         [recipients.ops]\ndisplay_name = \"Ops\"\nchannel = \"tg\"\nchat_id = {OPS}\nanswerers = [{ALICE}, {BOB}]\n\
         people = [\"alice\", \"bob\"]\n",
        token = fake.token(),
        api = fake.api_url(),
    );
    (fake, Server::start_with("", &config))
}

/// Alice's key, as askgate generated and kept it.
fn alice_key(server: &Server) -> String {
    std::fs::read_to_string(server.data_dir().join("web-key-alice"))
        .unwrap()
        .trim()
        .to_owned()
}

fn ids(state: &Value, list: &str) -> Vec<String> {
    state[list]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["id"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_people_of_a_group_each_answer_on_their_own_link_and_the_result_names_who_did() {
    let (fake, mut server) = start().await;
    let key = alice_key(&server);
    // The lines after the first come moments after it, one by one: wait
    // for the last of those checked (waiting for the first had let the
    // group's line be read before it was printed).
    let deadline = std::time::Instant::now() + PATIENCE;
    let mut stdout = server.stdout();
    while !(stdout.contains("web page for \"ops\"") && stdout.contains("(also answers for ops)"))
        && std::time::Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
        stdout = server.stdout();
    }
    assert!(
        stdout.contains("web page for \"ops\": none of its own (a group); answered on the pages of alice, bob"),
        "{stdout}"
    );
    assert!(stdout.contains("(also answers for ops)"), "{stdout}");

    let mut asked = server.ask_waiting(&deploy("ops")).await;
    let mine = server.create(&deploy("alice")).await["id"].as_str().unwrap().to_owned();
    let carols = server.create(&deploy("carol")).await["id"].as_str().unwrap().to_owned();
    let message = eventually_within("the group's prompt in Telegram", PATIENCE, || {
        fake.messages().get(&OPS).and_then(|sent| {
            sent.iter()
                .find(|m| m["reply_markup"].to_string().contains(&asked.id))
                .and_then(|m| m["message_id"].as_i64())
        })
    })
    .await;

    // Each person's page shows their questions only.
    let state = server.web_state(&key).await;
    assert_eq!(ids(&state, "pending"), [asked.id.clone(), mine.clone()]);
    assert_eq!(ids(&server.web_state(BOB_KEY).await, "pending"), [asked.id.clone()]);
    assert_eq!(ids(&server.web_state(CAROL_KEY).await, "pending"), [carols]);

    let mut alice_page = on_page(|| Page::open(&server.url(&format!("/web/{key}"))));
    let mut bob_page = on_page(|| Page::open(&server.url(&format!("/web/{BOB_KEY}"))));
    assert_eq!(
        on_page(|| alice_page.card(&asked.id)),
        ["Staging (Recommended)", "Production"]
    );
    on_page(|| bob_page.card(&asked.id));

    on_page(|| alice_page.tap(&asked.id, "Production"));
    on_page(|| alice_page.press(&asked.id, "submit"));
    assert_eq!(asked.result(PATIENCE).await, answered("Production"));
    let resource = server.question(&asked.id).await;
    assert_eq!(
        resource["answeredBy"],
        json!({"id": "web:alice", "displayName": "Alice"})
    );
    // On the page it was answered through, the summary needs no "where".
    assert_eq!(on_page(|| bob_page.summary(&asked.id)), "Answered by Alice: Production");
    let summary = "Answered by Alice in the web page: Production";
    eventually_within("the group's message edited into the summary", PATIENCE, || {
        fake.stored_message(OPS, message)
            .filter(|m| m["text"].as_str().is_some_and(|text| text.contains(summary)))
    })
    .await;
    // Bob comes too late.
    let (status, body) = server.web_choose(BOB_KEY, &asked.id, "deploy", 0).await;
    assert_eq!(status, 409, "{body}");
    drop((alice_page, bob_page));

    // A link that is no one's opens nothing: forged, or a group's name.
    for forged in ["svc-test-web-key-mallory-0123456789abcdefghij", "ops"] {
        let (status, body) = server.get(&format!("/web/{forged}/api/state"), None).await;
        assert_eq!(status, 404, "{forged}: {body}");
        let (status, body) = server.web_choose(forged, &mine, "deploy", 0).await;
        assert_eq!(status, 404, "{forged}: {body}");
    }

    // /link in Alice's private chat: her own link, without a preview.
    let dm = TgChat::private(ALICE);
    fake.message(&TgUser::new(ALICE, "Alice"), &dm, "/link", None, None);
    let sent = eventually_within("askgate's answer to /link", PATIENCE, || {
        fake.calls_to("sendMessage")
            .into_iter()
            .map(|call| call.body)
            .find(|body| body["chat_id"] == ALICE && body["text"].as_str().is_some_and(|t| t.contains("/web/")))
    })
    .await;
    assert!(
        sent["text"].as_str().unwrap().contains(&format!("/web/{key}")),
        "{sent}"
    );
    assert_eq!(sent["link_preview_options"]["is_disabled"], true, "{sent}");
    // (It answered nothing: Alice's own question is still pending.)
    assert_eq!(server.question(&mine).await["status"], "pending");

    // Rotated: the old link stops at the reload, the new one opens her page.
    // (The harness listens on port 0: the link's base is the configured one.)
    let shown = server.link("show", "alice");
    assert!(shown.trim().ends_with(&format!("/web/{key}")), "{shown}");
    let said = server.link("rotate", "alice");
    let new_link = said.lines().next().unwrap().to_owned();
    let new_key = new_link.rsplit('/').next().unwrap().to_owned();
    assert_ne!(new_key, key);
    assert!(said.contains("SIGHUP"), "{said}");
    server.signal("HUP");
    eventually_within_async("the old link refused after the reload", &server, &key).await;
    assert_eq!(
        ids(&server.web_state(&new_key).await, "pending"),
        std::slice::from_ref(&mine)
    );
    let (status, body) = server.web_choose(&key, &mine, "deploy", 0).await;
    assert_eq!(status, 404, "{body}");
    let (status, body) = server.web_choose(&new_key, &mine, "deploy", 1).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(server.question(&mine).await["answeredBy"]["id"], "web:alice");
}

/// Polls until `key`'s page is a 404.
async fn eventually_within_async(what: &str, server: &Server, key: &str) {
    let deadline = std::time::Instant::now() + PATIENCE;
    loop {
        let (status, _) = server.get(&format!("/web/{key}/api/state"), None).await;
        if status == 404 {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{what}: not within {PATIENCE:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
