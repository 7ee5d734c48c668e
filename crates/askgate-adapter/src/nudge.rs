//! What every adapter's [`askgate_core::Channel::nudge`] shares: the people
//! a nudge mentions, each once and each checked against the platform's form
//! of a user id before it is written into a message (an id that could close
//! a mention's markup is refused, not sent); and its outcome, logged alike.

use askgate_core::channel::{ChannelError, UserRef};

/// The people of `mention` whose ids `valid` takes, each once, in order;
/// [`ChannelError::Rejected`] naming the first id that is not one of
/// `platform`'s user ids.
pub fn people<'a>(
    mention: &'a [UserRef],
    platform: &str,
    valid: impl Fn(&str) -> bool,
) -> Result<Vec<&'a UserRef>, ChannelError> {
    let mut people: Vec<&UserRef> = Vec::new();
    for person in mention {
        if person.id.is_empty() || !valid(&person.id) {
            return Err(ChannelError::Rejected {
                reason: format!("\"{}\" is not a {platform} user id", person.id),
            });
        }
        // A platform may refuse an id twice (Discord's allowed_mentions).
        if people.iter().all(|known| known.id != person.id) {
            people.push(person);
        }
    }
    Ok(people)
}

/// `<@id> ` for each of `people`: how Discord and Slack both write a
/// mention that notifies.
pub fn at_mentions(people: &[&UserRef]) -> String {
    let mut lead = String::new();
    for person in people {
        lead.push_str("<@");
        lead.push_str(&person.id);
        lead.push_str("> ");
    }
    lead
}

/// `sent`, logged on `channel`: a nudge is askgate's own small message, so a
/// failure is worth a warning and a success a debug line.
pub fn logged<T>(channel: &str, sent: Result<T, ChannelError>) -> Result<(), ChannelError> {
    match sent {
        Ok(_) => {
            tracing::debug!(channel, "sent a nudge");
            Ok(())
        }
        Err(error) => {
            tracing::warn!(channel, %error, "could not send a nudge");
            Err(error)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn person(id: &str) -> UserRef {
        UserRef::new(id, "Alice")
    }

    #[test]
    fn each_person_is_mentioned_once_and_a_bad_id_is_refused() {
        let mention = [person("1"), person("2"), person("1")];
        let digits = |id: &str| id.bytes().all(|byte| byte.is_ascii_digit());
        let people = people(&mention, "Discord", digits).unwrap();
        assert_eq!(at_mentions(&people), "<@1> <@2> ");
        for bad in ["", "1> @everyone <@2"] {
            let refused = super::people(&[person(bad)], "Discord", digits).unwrap_err();
            assert!(
                matches!(&refused, ChannelError::Rejected { reason } if reason.contains("not a Discord user id")),
                "{refused:?}"
            );
        }
    }
}
