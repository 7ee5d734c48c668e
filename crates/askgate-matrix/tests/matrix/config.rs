//! `type = "matrix"`: the channel's keys and its recipients', checked with
//! the fix for each mistake.

use std::path::Path;

use askgate_adapter::config::{AdapterKind, ConfigCheck, ServerContext};
use askgate_core::channel::Destination;
use askgate_matrix::Matrix;

fn table(text: &str) -> toml::Table {
    toml::from_str(text).expect("test TOML parses")
}

fn env(name: &str) -> Option<String> {
    (name == "MATRIX_TOKEN").then(|| "syt_secret_token".to_owned())
}

#[test]
fn a_channel_needs_a_homeserver_a_user_id_and_a_token() {
    let mut check = ConfigCheck::new(&env);
    let data = Path::new("/var/lib/askgate");
    let settings = Matrix.channel(
        &mut check,
        "mx",
        table("homeserver = \"https://matrix.example.org/\"\nuser_id = \"@askgate:example.org\"\naccess_token = \"${MATRIX_TOKEN}\"\n"),
        ServerContext::new(None).with_data_dir(data),
    );
    assert!(check.problems().is_empty(), "{:?}", check.problems());
    let settings = format!("{settings:?}");
    assert!(
        settings.contains("https://matrix.example.org\""),
        "the trailing slash goes: {settings}"
    );
    assert!(settings.contains("/var/lib/askgate/channels/mx"), "{settings}");
    assert!(
        !settings.contains("syt_secret_token"),
        "the token is never shown: {settings}"
    );

    let mut check = ConfigCheck::new(&env);
    let missing = Matrix.channel(
        &mut check,
        "mx",
        table("user_id = \"askgate\"\naccess_token = \"${UNSET}\"\n"),
        ServerContext::new(None),
    );
    assert!(missing.is_none());
    let keys: Vec<&str> = check.problems().iter().map(|problem| problem.key.as_str()).collect();
    assert_eq!(
        keys,
        [
            "channels.mx.homeserver",
            "channels.mx.user_id",
            "channels.mx.access_token"
        ]
    );
    assert!(
        check.problems()[1].fix.contains("@askgate:example.org"),
        "{:?}",
        check.problems()
    );
}

#[test]
fn a_recipient_is_a_person_or_a_room_with_answerers() {
    let mut check = ConfigCheck::new(&env);
    let person = Matrix
        .recipient(&mut check, "alice", table("user_id = \"@alice:example.org\"\n"))
        .expect("a person");
    assert_eq!(
        person.destination,
        Destination {
            conversation: "@alice:example.org".into(),
            thread: None
        }
    );
    assert!(person.answerers.is_empty());
    let room = Matrix
        .recipient(
            &mut check,
            "team",
            table("room_id = \"!abc:example.org\"\nthread = \"$root\"\nanswerers = [\"@alice:example.org\"]\n"),
        )
        .expect("a room");
    assert_eq!(room.destination.conversation, "!abc:example.org");
    assert_eq!(room.destination.thread.as_deref(), Some("$root"));
    assert_eq!(room.answerers, ["@alice:example.org"]);
    assert!(check.problems().is_empty(), "{:?}", check.problems());

    for (keys, key) in [
        ("room_id = \"!abc:example.org\"\n", "recipients.r.answerers"),
        (
            "user_id = \"@a:x\"\nroom_id = \"!abc:example.org\"\n",
            "recipients.r.user_id",
        ),
        ("", "recipients.r.user_id"),
        ("user_id = \"alice\"\n", "recipients.r.user_id"),
        (
            "room_id = \"#alias:example.org\"\nanswerers = [\"@a:x\"]\n",
            "recipients.r.room_id",
        ),
        ("user_id = \"@a:x\"\nanswerers = [\"@b:x\"]\n", "recipients.r.user_id"),
    ] {
        let mut check = ConfigCheck::new(&env);
        assert!(Matrix.recipient(&mut check, "r", table(keys)).is_none(), "{keys}");
        assert_eq!(
            check.problems().first().map(|problem| problem.key.as_str()),
            Some(key),
            "{keys}: {:?}",
            check.problems()
        );
    }
}

#[test]
fn a_password_instead_of_a_token_logs_in_once_and_never_both() {
    let env = |name: &str| (name == "MATRIX_PASSWORD").then(|| "correct horse".to_owned());
    let base = "homeserver = \"https://matrix.example.org\"\nuser_id = \"@askgate:example.org\"\n";
    let mut check = ConfigCheck::new(&env);
    let settings = Matrix
        .channel(
            &mut check,
            "mx",
            table(&format!("{base}password = \"${{MATRIX_PASSWORD}}\"\n")),
            ServerContext::new(None),
        )
        .expect("a password is enough");
    assert!(check.problems().is_empty(), "{:?}", check.problems());
    assert!(
        !format!("{settings:?}").contains("correct horse"),
        "the password is never shown"
    );
    let mut check = ConfigCheck::new(&env);
    let both = Matrix.channel(
        &mut check,
        "mx",
        table(&format!("{base}password = \"x\"\naccess_token = \"y\"\n")),
        ServerContext::new(None),
    );
    assert!(both.is_none());
    assert_eq!(check.problems()[0].key, "channels.mx.password");
    let mut check = ConfigCheck::new(&env);
    assert!(
        Matrix
            .channel(&mut check, "mx", table(base), ServerContext::new(None))
            .is_none()
    );
    assert_eq!(check.problems()[0].key, "channels.mx.access_token");
    assert!(check.problems()[0].fix.contains("password"), "{:?}", check.problems());
}
