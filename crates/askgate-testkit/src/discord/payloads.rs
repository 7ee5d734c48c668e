//! Real payload samples from Discord's API documentation, for decoding tests.
//!
//! The interaction samples are the documentation's example objects: the
//! "Sample Component Interaction" and the "Text Input Interaction" of the
//! message components page (a button click and a modal submit, both in a
//! guild). Those examples predate fields Discord now always sends and
//! serenity 0.12 requires (`locale`, `entitlements`, `attachment_size_limit`,
//! the member's `flags`), so those fields are added with the values Discord
//! sends; `app_permissions`, `authorizing_integration_owners` and `context`
//! are added as the interaction object reference describes them. The DM
//! click is the same click as Discord sends it from a DM: `user` instead of
//! `member` and `guild_id`, context 1, the guild-install owner `"0"`. The
//! PING is the interaction structure with only the fields a PING has.
//!
//! The `MESSAGE_CREATE` sample is the `d` of the event: the documentation's
//! "Example Message" (`Supa Hot`), as a reply (type 19) to itself, with the
//! `message_reference` fields of its "Example Crossposted Message" (a reply's
//! reference type is 0) and the `MESSAGE_CREATE` extra fields (`guild_id`,
//! `member`, `channel_type`) of the gateway events page. The DM sample is a
//! plain message in a DM (no `guild_id` or `member`).

/// Real payload samples by name: `component_guild`, `component_dm`,
/// `modal_submit`, `ping` (interaction objects, as the gateway's
/// `INTERACTION_CREATE` `d` and as the body of an HTTP interaction), and
/// `message_create_reply`, `message_create_dm` (`MESSAGE_CREATE` `d`).
pub const DISCORD_PAYLOADS: &[(&str, &str)] = &[
    ("component_guild", COMPONENT_GUILD),
    ("component_dm", COMPONENT_DM),
    ("modal_submit", MODAL_SUBMIT),
    ("ping", PING),
    ("message_create_reply", MESSAGE_CREATE_REPLY),
    ("message_create_dm", MESSAGE_CREATE_DM),
];

/// One sample from [`DISCORD_PAYLOADS`], by name (`.json` optional).
///
/// # Panics
///
/// If there is no sample with that name.
pub fn discord_payload(name: &str) -> &'static str {
    let name = name.strip_suffix(".json").unwrap_or(name);
    match DISCORD_PAYLOADS.iter().find(|(sample, _)| *sample == name) {
        Some((_, payload)) => payload,
        None => {
            let names: Vec<&str> = DISCORD_PAYLOADS.iter().map(|(sample, _)| *sample).collect();
            panic!("no Discord payload sample named {name:?}; there are {names:?}")
        }
    }
}

const COMPONENT_GUILD: &str = r#"{
    "version": 1,
    "type": 3,
    "token": "unique_interaction_token",
    "message": {
        "type": 0,
        "tts": false,
        "timestamp": "2021-05-19T02:12:51.710000+00:00",
        "pinned": false,
        "mentions": [],
        "mention_roles": [],
        "mention_everyone": false,
        "id": "844397162624450620",
        "flags": 0,
        "embeds": [],
        "edited_timestamp": null,
        "content": "This is a message with components.",
        "components": [
            {
                "type": 1,
                "components": [
                    {
                        "type": 2,
                        "label": "Click me!",
                        "style": 1,
                        "custom_id": "click_one"
                    }
                ]
            }
        ],
        "channel_id": "345626669114982402",
        "author": {
            "username": "Mason",
            "public_flags": 131141,
            "id": "53908232506183680",
            "discriminator": "1337",
            "avatar": "a_d5efa99b3eeaa7dd43acca82f5692432"
        },
        "attachments": []
    },
    "member": {
        "user": {
            "username": "Mason",
            "public_flags": 131141,
            "id": "53908232506183680",
            "discriminator": "1337",
            "avatar": "a_d5efa99b3eeaa7dd43acca82f5692432"
        },
        "roles": [
            "290926798626357999"
        ],
        "premium_since": null,
        "permissions": "17179869183",
        "pending": false,
        "nick": null,
        "mute": false,
        "joined_at": "2017-03-13T19:19:14.040000+00:00",
        "is_pending": false,
        "deaf": false,
        "avatar": null,
        "flags": 0
    },
    "id": "846462639134605312",
    "guild_id": "290926798626357999",
    "data": {
        "custom_id": "click_one",
        "component_type": 2
    },
    "channel_id": "345626669114982999",
    "application_id": "290926444748734465",
    "app_permissions": "442368",
    "authorizing_integration_owners": { "0": "290926798626357999" },
    "context": 0,
    "locale": "en-US",
    "guild_locale": "en-US",
    "entitlements": [],
    "attachment_size_limit": 10485760
}"#;

const COMPONENT_DM: &str = r#"{
    "version": 1,
    "type": 3,
    "token": "unique_interaction_token",
    "message": {
        "type": 0,
        "tts": false,
        "timestamp": "2021-05-19T02:12:51.710000+00:00",
        "pinned": false,
        "mentions": [],
        "mention_roles": [],
        "mention_everyone": false,
        "id": "844397162624450620",
        "flags": 0,
        "embeds": [],
        "edited_timestamp": null,
        "content": "This is a message with components.",
        "components": [
            {
                "type": 1,
                "components": [
                    {
                        "type": 2,
                        "label": "Click me!",
                        "style": 1,
                        "custom_id": "click_one"
                    }
                ]
            }
        ],
        "channel_id": "345626669114982402",
        "author": {
            "username": "Mason",
            "public_flags": 131141,
            "id": "53908232506183680",
            "discriminator": "1337",
            "avatar": "a_d5efa99b3eeaa7dd43acca82f5692432"
        },
        "attachments": []
    },
    "user": {
        "username": "Mason",
        "public_flags": 131141,
        "id": "53908232506183680",
        "discriminator": "1337",
        "avatar": "a_d5efa99b3eeaa7dd43acca82f5692432"
    },
    "id": "846462639134605312",
    "data": {
        "custom_id": "click_one",
        "component_type": 2
    },
    "channel_id": "345626669114982402",
    "channel": {
        "id": "345626669114982402",
        "type": 1,
        "flags": 0,
        "last_message_id": "844397162624450620",
        "recipients": [
            {
                "username": "Mason",
                "public_flags": 131141,
                "id": "53908232506183680",
                "discriminator": "1337",
                "avatar": "a_d5efa99b3eeaa7dd43acca82f5692432"
            }
        ]
    },
    "application_id": "290926444748734465",
    "app_permissions": "442368",
    "authorizing_integration_owners": { "0": "0" },
    "context": 1,
    "locale": "en-US",
    "entitlements": [],
    "attachment_size_limit": 10485760
}"#;

const MODAL_SUBMIT: &str = r#"{
    "application_id": "845027738276462632",
    "channel": {
        "flags": 0,
        "guild_id": "772904309264089089",
        "id": "772908445358620702",
        "last_message_id": "113817814796417433",
        "name": "general",
        "nsfw": false,
        "parent_id": "1113560261366927532",
        "permissions": "281474976710655",
        "position": 0,
        "rate_limit_per_user": 0,
        "topic": null,
        "type": 0
    },
    "channel_id": "772908445358620702",
    "data": {
        "components": [
            {
                "type": 1,
                "components": [
                    {
                        "custom_id": "name",
                        "type": 4,
                        "value": "John"
                    }
                ]
            }
        ],
        "custom_id": "cool_modal"
    },
    "guild_id": "772904309264089089",
    "id": "847587388497854464",
    "member": {
        "avatar": null,
        "deaf": false,
        "is_pending": false,
        "joined_at": "2020-11-02T19:25:47.248000+00:00",
        "mute": false,
        "nick": null,
        "pending": false,
        "permissions": "17179869183",
        "premium_since": null,
        "roles": ["785609923542777878"],
        "user": {
            "avatar": "a_d5efa99b3eeaa7dd43acca82f5692432",
            "global_name": "Mason",
            "discriminator": "0",
            "id": "53908232506183680",
            "public_flags": 131141,
            "username": "Mason"
        },
        "flags": 0
    },
    "token": "UNIQUE_TOKEN",
    "type": 5,
    "version": 1,
    "app_permissions": "442368",
    "authorizing_integration_owners": { "0": "772904309264089089" },
    "context": 0,
    "locale": "en-US",
    "guild_locale": "en-US",
    "entitlements": [],
    "attachment_size_limit": 10485760
}"#;

const PING: &str = r#"{
    "id": "846462639134605312",
    "application_id": "290926444748734465",
    "type": 1,
    "token": "unique_interaction_token",
    "version": 1
}"#;

const MESSAGE_CREATE_REPLY: &str = r#"{
    "reactions": [],
    "attachments": [],
    "tts": false,
    "embeds": [],
    "timestamp": "2017-07-11T17:29:03.611000+00:00",
    "mention_everyone": false,
    "id": "334385686279651329",
    "pinned": false,
    "edited_timestamp": null,
    "author": {
        "username": "Mason",
        "discriminator": "9999",
        "id": "53908099506183680",
        "avatar": "a_bab14f271d565501444b2ca3be944b25"
    },
    "mention_roles": [],
    "content": "Supa Hot indeed",
    "channel_id": "290926798999357250",
    "mentions": [],
    "type": 19,
    "flags": 0,
    "message_reference": {
        "type": 0,
        "channel_id": "290926798999357250",
        "guild_id": "290926798626357999",
        "message_id": "334385199974967042"
    },
    "referenced_message": {
        "reactions": [],
        "attachments": [],
        "tts": false,
        "embeds": [],
        "timestamp": "2017-07-11T17:27:07.299000+00:00",
        "mention_everyone": false,
        "id": "334385199974967042",
        "pinned": false,
        "edited_timestamp": null,
        "author": {
            "username": "Mason",
            "discriminator": "9999",
            "id": "53908099506183680",
            "avatar": "a_bab14f271d565501444b2ca3be944b25"
        },
        "mention_roles": [],
        "content": "Supa Hot",
        "channel_id": "290926798999357250",
        "mentions": [],
        "type": 0
    },
    "guild_id": "290926798626357999",
    "member": {
        "roles": [],
        "premium_since": null,
        "pending": false,
        "nick": null,
        "mute": false,
        "joined_at": "2017-03-13T19:19:14.040000+00:00",
        "flags": 0,
        "deaf": false,
        "communication_disabled_until": null,
        "banner": null,
        "avatar": null
    },
    "channel_type": 0
}"#;

const MESSAGE_CREATE_DM: &str = r#"{
    "attachments": [],
    "tts": false,
    "embeds": [],
    "timestamp": "2017-07-11T17:27:07.299000+00:00",
    "mention_everyone": false,
    "id": "334385199974967042",
    "pinned": false,
    "edited_timestamp": null,
    "author": {
        "username": "Mason",
        "discriminator": "9999",
        "id": "53908099506183680",
        "avatar": "a_bab14f271d565501444b2ca3be944b25"
    },
    "mention_roles": [],
    "content": "Supa Hot",
    "channel_id": "290926798999357250",
    "mentions": [],
    "type": 0,
    "flags": 0,
    "components": [],
    "channel_type": 1
}"#;
