//! An object's uid, compact. The API server's uids are UUIDs in their canonical text form
//! (36 lowercase characters): kept as their 16 bytes, not a 36-byte string on the heap
//! behind a 24-byte `String`, since the owner graph holds one per object and one per owner
//! reference (at the envelope, 186,000 objects). Anything else (a hand-written owner
//! reference) is kept as its text, so every uid prints exactly as the server sent it and
//! compares as its text did. Pure.

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, Visitor};
use serde::{Serialize, Serializer};
use uuid::Uuid;

#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Uid {
    Uuid(Uuid),
    Text(Box<str>),
}

impl Uid {
    /// Only the canonical lowercase hyphenated form becomes a `Uuid`, the one form that
    /// prints back as it was read; any other text stays text.
    pub fn new(text: &str) -> Uid {
        let canonical = text.len() == 36 && !text.bytes().any(|b| b.is_ascii_uppercase());
        match Uuid::try_parse(text) {
            Ok(u) if canonical => Uid::Uuid(u),
            _ => Uid::Text(text.into()),
        }
    }

    pub fn is_empty(&self) -> bool {
        matches!(self, Uid::Text(t) if t.is_empty())
    }
}

impl Default for Uid {
    fn default() -> Uid {
        Uid::Text("".into())
    }
}

impl From<&str> for Uid {
    fn from(text: &str) -> Uid {
        Uid::new(text)
    }
}

impl PartialEq<str> for Uid {
    fn eq(&self, text: &str) -> bool {
        *self == Uid::new(text)
    }
}

impl fmt::Display for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Uid::Uuid(u) => fmt::Display::fmt(&u.hyphenated(), f),
            Uid::Text(t) => f.write_str(t),
        }
    }
}

impl fmt::Debug for Uid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.to_string())
    }
}

impl Serialize for Uid {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Uid {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Uid, D::Error> {
        struct Text;
        impl Visitor<'_> for Text {
            type Value = Uid;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a uid")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Uid, E> {
                Ok(Uid::new(v))
            }
        }
        d.deserialize_str(Text)
    }
}

impl schemars::JsonSchema for Uid {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "String".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        String::json_schema(g)
    }
    fn inline_schema() -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn server_uids_are_bytes_and_print_back() {
        let text = "6f1c2f6e-8a7b-4c1d-9e2f-0a1b2c3d4e5f";
        let uid = Uid::new(text);
        assert!(matches!(uid, Uid::Uuid(_)));
        assert_eq!(uid.to_string(), text);
        assert!(uid == *text);
    }

    #[test]
    fn other_text_stays_text() {
        for text in ["", "abc", "6F1C2F6E-8A7B-4C1D-9E2F-0A1B2C3D4E5F", "6f1c2f6e8a7b4c1d9e2f0a1b2c3d4e5f"] {
            let uid = Uid::new(text);
            assert!(matches!(uid, Uid::Text(_)), "{text}");
            assert_eq!(uid.to_string(), text);
        }
        // Compared as text: the uppercase spelling of a uid is another uid, as it was to the GC.
        assert_ne!(Uid::new("6F1C2F6E-8A7B-4C1D-9E2F-0A1B2C3D4E5F"), Uid::new("6f1c2f6e-8a7b-4c1d-9e2f-0a1b2c3d4e5f"));
    }

    #[test]
    fn json_round_trip() {
        let uid: Uid = serde_json::from_str("\"6f1c2f6e-8a7b-4c1d-9e2f-0a1b2c3d4e5f\"").unwrap();
        assert_eq!(serde_json::to_string(&uid).unwrap(), "\"6f1c2f6e-8a7b-4c1d-9e2f-0a1b2c3d4e5f\"");
        assert!(std::mem::size_of::<Uid>() <= 24);
    }

    proptest! {
        // Any text prints back as itself, and two uids are equal exactly when their texts are.
        #[test]
        fn text_round_trips(a in "[0-9a-fA-F-]{0,40}|\\PC{0,8}", b in "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}") {
            prop_assert_eq!(Uid::new(&a).to_string(), a.clone());
            prop_assert_eq!(Uid::new(&b).to_string(), b.clone());
            prop_assert!(matches!(Uid::new(&b), Uid::Uuid(_)));
            prop_assert_eq!(Uid::new(&a) == Uid::new(&b), a == b);
        }
    }
}
