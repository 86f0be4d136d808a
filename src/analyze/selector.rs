//! Label selector algebra: parsing (LabelSelector objects and kubectl's `-l`
//! syntax), matching, and an exact overlap decision with a witness label set.
//!
//! Keys are independent and values range over an unbounded domain, so two
//! selectors overlap unless, for some key, the combined constraints cannot be
//! met: In sets with an empty intersection, In values all excluded by NotIn,
//! Exists or In together with DoesNotExist.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use serde::Serialize;

use super::intern::Interner;

pub type Labels = BTreeMap<String, String>;

/// What a selector reads of a label set: the value of one key.
pub trait LabelSet {
    fn value(&self, key: &str) -> Option<&str>;
}

impl LabelSet for Labels {
    fn value(&self, key: &str) -> Option<&str> {
        self.get(key).map(String::as_str)
    }
}

/// A pod's labels as pairs sorted by key: one allocation for the few labels a pod has, where a
/// [`Labels`] map takes a B-tree node of about 550 bytes. Tens of thousands of pods are held at
/// once, and the nodes' allocation and page faults were the larger part of decoding their labels.
/// The strings can be shared with other pods' ([`LabelPairs::share`]): the pods of one
/// ReplicaSet carry the same labels.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelPairs(Box<[(Arc<str>, Arc<str>)]>);

impl LabelPairs {
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }

    /// Points every key and value at `strings`' shared copy.
    pub fn share(&mut self, strings: &mut Interner) {
        for (k, v) in self.0.iter_mut() {
            *k = strings.get(k);
            *v = strings.get(v);
        }
    }
}

impl LabelSet for LabelPairs {
    fn value(&self, key: &str) -> Option<&str> {
        let i = self.0.binary_search_by(|(k, _)| (**k).cmp(key)).ok()?;
        Some(&self.0[i].1)
    }
}

impl LabelPairs {
    /// Sorted by key; a key given twice keeps its last value, as a map does.
    fn sorted(mut pairs: Vec<(Arc<str>, Arc<str>)>) -> LabelPairs {
        // Stable, so that of equal keys the last given stays last and is the one kept.
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        let mut kept: Vec<(Arc<str>, Arc<str>)> = Vec::with_capacity(pairs.len());
        for pair in pairs {
            match kept.last_mut() {
                Some(last) if last.0 == pair.0 => *last = pair,
                _ => kept.push(pair),
            }
        }
        LabelPairs(kept.into_boxed_slice())
    }
}

impl FromIterator<(String, String)> for LabelPairs {
    fn from_iter<I: IntoIterator<Item = (String, String)>>(pairs: I) -> LabelPairs {
        LabelPairs::sorted(pairs.into_iter().map(|(k, v)| (Arc::from(k), Arc::from(v))).collect())
    }
}

/// A string decoded straight into an `Arc<str>`, without a `String` first.
struct SharedText(Arc<str>);

impl<'de> serde::Deserialize<'de> for SharedText {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<SharedText, D::Error> {
        struct Text;
        impl serde::de::Visitor<'_> for Text {
            type Value = SharedText;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<SharedText, E> {
                Ok(SharedText(Arc::from(text)))
            }
        }
        d.deserialize_str(Text)
    }
}

impl<'de> serde::Deserialize<'de> for LabelPairs {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<LabelPairs, D::Error> {
        struct Pairs;
        impl<'de> serde::de::Visitor<'de> for Pairs {
            type Value = LabelPairs;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of labels")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<LabelPairs, A::Error> {
                let mut pairs = Vec::with_capacity(map.size_hint().unwrap_or(0).min(64));
                while let Some((k, v)) = map.next_entry::<SharedText, SharedText>()? {
                    pairs.push((k.0, v.0));
                }
                Ok(LabelPairs::sorted(pairs))
            }
        }
        d.deserialize_map(Pairs)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Op {
    In(BTreeSet<String>),
    NotIn(BTreeSet<String>),
    Exists,
    DoesNotExist,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Requirement {
    pub key: String,
    pub op: Op,
}

/// A selector: `None` (null) selects nothing; an empty list selects everything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selector {
    pub requirements: Option<Vec<Requirement>>,
}

impl Selector {
    pub fn nothing() -> Selector {
        Selector { requirements: None }
    }

    pub fn everything() -> Selector {
        Selector { requirements: Some(Vec::new()) }
    }

    pub fn from_map(map: &BTreeMap<String, String>) -> Selector {
        Selector {
            requirements: Some(
                map.iter()
                    .map(|(k, v)| Requirement { key: k.clone(), op: Op::In(BTreeSet::from([v.clone()])) })
                    .collect(),
            ),
        }
    }

    /// From a LabelSelector's parts; errors name the offending expression.
    pub fn from_parts(
        match_labels: Option<&BTreeMap<String, String>>,
        match_expressions: &[(String, String, Vec<String>)],
    ) -> Result<Selector, String> {
        let mut reqs = match match_labels {
            Some(m) => Selector::from_map(m).requirements.unwrap_or_default(),
            None => Vec::new(),
        };
        for (key, operator, values) in match_expressions {
            let set: BTreeSet<String> = values.iter().cloned().collect();
            let op = match operator.as_str() {
                "In" | "NotIn" if set.is_empty() => {
                    return Err(format!("{key} {operator}: needs at least one value"));
                }
                "In" => Op::In(set),
                "NotIn" => Op::NotIn(set),
                "Exists" | "DoesNotExist" if !set.is_empty() => {
                    return Err(format!("{key} {operator}: takes no values"));
                }
                "Exists" => Op::Exists,
                "DoesNotExist" => Op::DoesNotExist,
                other => return Err(format!("{key}: unknown operator {other:?}")),
            };
            reqs.push(Requirement { key: key.clone(), op });
        }
        Ok(Selector { requirements: Some(reqs) })
    }

    pub fn matches(&self, labels: &(impl LabelSet + ?Sized)) -> bool {
        let Some(reqs) = &self.requirements else {
            return false;
        };
        reqs.iter().all(|r| r.matches(labels))
    }

    /// key=value pairs every selected label set must carry (from matchLabels or a one-value In).
    pub fn required_pairs(&self) -> Vec<(&str, &str)> {
        let Some(reqs) = &self.requirements else {
            return Vec::new();
        };
        reqs.iter()
            .filter_map(|r| match &r.op {
                Op::In(values) if values.len() == 1 => {
                    Some((r.key.as_str(), values.iter().next().map(String::as_str).unwrap_or_default()))
                }
                _ => None,
            })
            .collect()
    }
}

impl Requirement {
    pub fn matches(&self, labels: &(impl LabelSet + ?Sized)) -> bool {
        let value = labels.value(&self.key);
        match &self.op {
            Op::In(values) => value.is_some_and(|v| values.contains(v)),
            // NotIn also matches objects without the key.
            Op::NotIn(values) => value.is_none_or(|v| !values.contains(v)),
            Op::Exists => value.is_some(),
            Op::DoesNotExist => value.is_none(),
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |v: &BTreeSet<String>| v.iter().cloned().collect::<Vec<_>>().join(",");
        match &self.op {
            Op::In(v) if v.len() == 1 => write!(f, "{}={}", self.key, list(v)),
            Op::In(v) => write!(f, "{} in ({})", self.key, list(v)),
            Op::NotIn(v) if v.len() == 1 => write!(f, "{}!={}", self.key, list(v)),
            Op::NotIn(v) => write!(f, "{} notin ({})", self.key, list(v)),
            Op::Exists => write!(f, "{}", self.key),
            Op::DoesNotExist => write!(f, "!{}", self.key),
        }
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.requirements {
            None => f.write_str("<null: selects nothing>"),
            Some(r) if r.is_empty() => f.write_str("<empty: selects everything>"),
            Some(r) => f.write_str(&r.iter().map(|r| r.to_string()).collect::<Vec<_>>().join(",")),
        }
    }
}

/// Why two selectors cannot select a common label set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Separation {
    /// Empty when one side is a null selector.
    pub key: String,
    pub reason: String,
}

/// `Ok(witness)`: a label set both select. `Err(separation)`: they are disjoint.
pub fn overlap(a: &Selector, b: &Selector) -> Result<Labels, Separation> {
    let (Some(ra), Some(rb)) = (&a.requirements, &b.requirements) else {
        return Err(Separation { key: String::new(), reason: "a null selector selects nothing".into() });
    };
    let mut by_key: BTreeMap<&str, Vec<&Op>> = BTreeMap::new();
    for r in ra.iter().chain(rb) {
        by_key.entry(&r.key).or_default().push(&r.op);
    }
    let mut witness = Labels::new();
    for (key, ops) in by_key {
        match satisfy(&ops) {
            Ok(Some(value)) => {
                witness.insert(key.to_string(), value);
            }
            Ok(None) => {}
            Err(reason) => {
                return Err(Separation { key: key.to_string(), reason });
            }
        }
    }
    Ok(witness)
}

/// A value for one key meeting every constraint (`None`: leave the key out).
fn satisfy(ops: &[&Op]) -> Result<Option<String>, String> {
    let mut allowed: Option<BTreeSet<&String>> = None;
    let mut excluded: BTreeSet<&String> = BTreeSet::new();
    let (mut must_exist, mut must_not) = (false, false);
    for op in ops {
        match op {
            Op::In(values) => {
                must_exist = true;
                let set: BTreeSet<&String> = values.iter().collect();
                allowed = Some(match allowed {
                    None => set,
                    Some(prev) => prev.intersection(&set).copied().collect(),
                });
            }
            Op::NotIn(values) => excluded.extend(values),
            Op::Exists => must_exist = true,
            Op::DoesNotExist => must_not = true,
        }
    }
    if must_not {
        return if must_exist { Err("one requires the key, the other requires it absent".into()) } else { Ok(None) };
    }
    if let Some(allowed) = allowed {
        return match allowed.iter().find(|v| !excluded.contains(*v)) {
            Some(v) => Ok(Some((*v).clone())),
            None if allowed.is_empty() => Err("the In value sets do not intersect".into()),
            None => Err("every In value is excluded by NotIn".into()),
        };
    }
    if must_exist {
        // Any valid label value outside the excluded set.
        let mut candidate = "coord-witness".to_string();
        let mut n = 0;
        while excluded.contains(&candidate) {
            n += 1;
            candidate = format!("coord-witness-{n}");
        }
        return Ok(Some(candidate));
    }
    Ok(None)
}

/// kubectl's `-l` syntax: `a=b`, `a==b`, `a!=b`, `a in (x,y)`, `a notin (x)`, `a`, `!a`,
/// comma-separated and ANDed.
pub fn parse(text: &str) -> Result<Selector, String> {
    let mut reqs = Vec::new();
    let mut rest = text.trim();
    if rest.is_empty() {
        return Ok(Selector::everything());
    }
    loop {
        let (req, after) = parse_requirement(rest).map_err(|e| format!("invalid selector {text:?}: {e}"))?;
        reqs.push(req);
        let after = after.trim_start();
        if after.is_empty() {
            break;
        }
        rest = after
            .strip_prefix(',')
            .ok_or_else(|| format!("invalid selector {text:?}: expected ',' before {after:?}"))?;
        rest = rest.trim_start();
    }
    Ok(Selector { requirements: Some(reqs) })
}

fn parse_requirement(s: &str) -> Result<(Requirement, &str), String> {
    if let Some(after) = s.strip_prefix('!') {
        let (key, rest) = take_key(after.trim_start())?;
        return Ok((Requirement { key, op: Op::DoesNotExist }, rest));
    }
    let (key, rest) = take_key(s)?;
    let trimmed = rest.trim_start();
    let single = |rest: &str, negate: bool| -> Result<(Requirement, String), String> {
        let (value, after) = take_value(rest.trim_start())?;
        let set = BTreeSet::from([value]);
        let op = if negate { Op::NotIn(set) } else { Op::In(set) };
        Ok((Requirement { key: key.clone(), op }, after.to_string()))
    };
    let (req, after) = if let Some(r) = trimmed.strip_prefix("==") {
        single(r, false)?
    } else if let Some(r) = trimmed.strip_prefix("!=") {
        single(r, true)?
    } else if let Some(r) = trimmed.strip_prefix('=') {
        single(r, false)?
    } else if let Some(r) = word(trimmed, "notin") {
        let (values, after) = take_set(r)?;
        (Requirement { key: key.clone(), op: Op::NotIn(values) }, after.to_string())
    } else if let Some(r) = word(trimmed, "in") {
        let (values, after) = take_set(r)?;
        (Requirement { key: key.clone(), op: Op::In(values) }, after.to_string())
    } else {
        (Requirement { key: key.clone(), op: Op::Exists }, rest.to_string())
    };
    // Hand back a suffix of the input.
    let offset = s.len() - after.len();
    Ok((req, &s[offset..]))
}

fn word<'a>(s: &'a str, w: &str) -> Option<&'a str> {
    let rest = s.strip_prefix(w)?;
    (rest.starts_with(|c: char| c.is_whitespace() || c == '(')).then_some(rest)
}

fn take_key(s: &str) -> Result<(String, &str), String> {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || "-_./".contains(c))).unwrap_or(s.len());
    let key = &s[..end];
    validate_key(key)?;
    Ok((key.to_string(), &s[end..]))
}

fn take_value(s: &str) -> Result<(String, &str), String> {
    let end = s.find(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c))).unwrap_or(s.len());
    let value = &s[..end];
    validate_value(value)?;
    Ok((value.to_string(), &s[end..]))
}

fn take_set(s: &str) -> Result<(BTreeSet<String>, &str), String> {
    let s = s.trim_start().strip_prefix('(').ok_or("expected '(' after in/notin")?;
    let close = s.find(')').ok_or("missing ')'")?;
    let mut values = BTreeSet::new();
    for part in s[..close].split(',') {
        let part = part.trim();
        validate_value(part)?;
        if part.is_empty() {
            return Err("empty value in a set".into());
        }
        values.insert(part.to_string());
    }
    Ok((values, &s[close + 1..]))
}

/// Label keys: optional DNS-subdomain prefix and '/', then a name of at most 63
/// characters of alphanumerics, '-', '_', '.', starting and ending alphanumeric.
pub fn validate_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    if let Some(p) = prefix
        && (p.is_empty()
            || p.len() > 253
            || !p
                .split('.')
                .all(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')))
    {
        return Err(format!("invalid label key prefix {p:?}"));
    }
    if name.is_empty() || !is_label_name(name) {
        return Err(format!("invalid label key {key:?}"));
    }
    Ok(())
}

pub fn validate_value(value: &str) -> Result<(), String> {
    if value.is_empty() || is_label_name(value) { Ok(()) } else { Err(format!("invalid label value {value:?}")) }
}

fn is_label_name(s: &str) -> bool {
    s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_' || b == b'.')
        && s.starts_with(|c: char| c.is_ascii_alphanumeric())
        && s.ends_with(|c: char| c.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sel(s: &str) -> Selector {
        parse(s).unwrap()
    }

    fn labels(pairs: &[(&str, &str)]) -> Labels {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn parses_kubectl_syntax() {
        let s = sel("app=web, tier in (a,b),env notin (prod), !legacy,track, x==y,z!=w");
        assert_eq!(s.to_string(), "app=web,tier in (a,b),env!=prod,!legacy,track,x=y,z!=w");
        for bad in
            ["a in (", "a in ()", "=x", "a=b,", "a b", "a in x", "-a=b", "a=b c", "a=-x", "a/=b", "/a=b", "a.-=b"]
        {
            assert!(parse(bad).is_err(), "{bad:?} should not parse");
        }
        assert_eq!(parse("").unwrap(), Selector::everything());
        assert!(parse("example.com/app=web").is_ok());
    }

    #[test]
    fn matching_semantics() {
        let s = sel("env!=prod");
        assert!(s.matches(&labels(&[])), "NotIn matches a missing key");
        assert!(!s.matches(&labels(&[("env", "prod")])));
        assert!(Selector::everything().matches(&labels(&[])));
        assert!(!Selector::nothing().matches(&labels(&[("a", "b")])));
    }

    #[test]
    fn label_pairs_decode_as_the_map_does() {
        let text = r#"{"b": "1", "a": "2", "b": "3", "c": "", "d\u00e9": "x\"y"}"#;
        let pairs: LabelPairs = serde_json::from_str(text).unwrap();
        let map: Labels = serde_json::from_str(text).unwrap();
        assert!(pairs.iter().eq(map.iter().map(|(k, v)| (k.as_str(), v.as_str()))));
        assert_eq!((pairs.value("b"), pairs.value("c"), pairs.value("d")), (Some("3"), Some(""), None));
        assert_eq!(pairs.value("dé"), Some("x\"y"), "escaped text decodes");
        for bad in [r#"{"a": 1}"#, "null", r#"["a"]"#] {
            assert!(serde_json::from_str::<LabelPairs>(bad).is_err() && serde_json::from_str::<Labels>(bad).is_err());
        }
    }

    /// Shared, the labels of two pods are the same strings, and read the same.
    #[test]
    fn shared_labels_point_at_one_copy() {
        let mut strings = Interner::default();
        let text = r#"{"app": "web", "tier": "fe"}"#;
        let (mut a, mut b): (LabelPairs, LabelPairs) =
            (serde_json::from_str(text).unwrap(), serde_json::from_str(text).unwrap());
        let before = a.clone();
        a.share(&mut strings);
        b.share(&mut strings);
        assert_eq!(a, before);
        assert!(a.0.iter().zip(b.0.iter()).all(|(x, y)| Arc::ptr_eq(&x.0, &y.0) && Arc::ptr_eq(&x.1, &y.1)));
        assert_eq!(strings.len(), 4);
    }

    #[test]
    fn overlap_cases() {
        let w = overlap(&sel("app=web"), &sel("app in (web,api),tier")).unwrap();
        assert_eq!(w.get("app").map(String::as_str), Some("web"));
        assert!(w.contains_key("tier"));
        assert_eq!(overlap(&sel("app=web"), &sel("app=api")).unwrap_err().key, "app");
        assert_eq!(
            overlap(&sel("app in (a,b)"), &sel("app notin (a,b)")).unwrap_err().reason,
            "every In value is excluded by NotIn"
        );
        assert!(overlap(&sel("app"), &sel("!app")).is_err());
        assert!(overlap(&sel("app=a"), &sel("!app")).is_err());
        assert!(overlap(&sel("app!=a"), &sel("!app")).is_ok());
        assert!(overlap(&Selector::nothing(), &Selector::everything()).is_err());
        assert!(overlap(&Selector::everything(), &sel("x=y")).is_ok());
        let w = overlap(&sel("app,app notin (coord-witness)"), &sel("app")).unwrap();
        assert_eq!(w["app"], "coord-witness-1");
    }

    #[test]
    fn selector_objects() {
        let ml = BTreeMap::from([("app".to_string(), "web".to_string())]);
        let s = Selector::from_parts(Some(&ml), &[("tier".into(), "NotIn".into(), vec!["db".into()])]).unwrap();
        assert_eq!(s.to_string(), "app=web,tier!=db");
        assert!(Selector::from_parts(None, &[("a".into(), "In".into(), vec![])]).is_err());
        assert!(Selector::from_parts(None, &[("a".into(), "Exists".into(), vec!["x".into()])]).is_err());
        assert!(Selector::from_parts(None, &[("a".into(), "Gt".into(), vec!["1".into()])]).is_err());
        assert_eq!(Selector::from_parts(None, &[]).unwrap(), Selector::everything());
    }

    const KEYS: [&str; 3] = ["a", "b", "c"];
    const VALUES: [&str; 3] = ["x", "y", "z"];

    fn op() -> impl Strategy<Value = Op> {
        let set =
            proptest::collection::btree_set(proptest::sample::select(VALUES.to_vec()).prop_map(String::from), 1..=3);
        prop_oneof![set.clone().prop_map(Op::In), set.prop_map(Op::NotIn), Just(Op::Exists), Just(Op::DoesNotExist),]
    }

    fn selector() -> impl Strategy<Value = Selector> {
        let req = (proptest::sample::select(KEYS.to_vec()), op()).prop_map(|(k, op)| Requirement { key: k.into(), op });
        prop_oneof![
            1 => Just(Selector::nothing()),
            9 => proptest::collection::vec(req, 0..4).prop_map(|r| Selector { requirements: Some(r) }),
        ]
    }

    /// Every label set over KEYS with each key absent, one of VALUES, or a value outside them.
    fn universe() -> Vec<Labels> {
        let choices: Vec<Option<&str>> = vec![None, Some("x"), Some("y"), Some("z"), Some("other")];
        let mut out = vec![Labels::new()];
        for key in KEYS {
            out = out
                .into_iter()
                .flat_map(|l| {
                    choices.iter().map(move |c| {
                        let mut l = l.clone();
                        if let Some(v) = c {
                            l.insert(key.to_string(), v.to_string());
                        }
                        l
                    })
                })
                .collect();
        }
        out
    }

    proptest! {
        // 2000 by default (the brute force is costly); scripts/fuzz.sh raises it with PROPTEST_CASES.
        #![proptest_config(ProptestConfig::with_cases(
            std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000)
        ))]

        #[test]
        fn overlap_agrees_with_brute_force_and_witnesses_hold(a in selector(), b in selector()) {
            let brute = universe().iter().any(|l| a.matches(l) && b.matches(l));
            match overlap(&a, &b) {
                Ok(w) => {
                    prop_assert!(brute, "claimed overlap {} / {} with witness {:?}", a, b, w);
                    prop_assert!(a.matches(&w) && b.matches(&w), "witness {:?} fails {} / {}", w, a, b);
                }
                Err(sep) => prop_assert!(!brute, "claimed disjoint ({:?}) but brute force overlaps: {} / {}", sep, a, b),
            }
            prop_assert_eq!(overlap(&a, &b).is_ok(), overlap(&b, &a).is_ok());
        }

        #[test]
        fn printed_selectors_parse_back(a in selector()) {
            if a.requirements.as_ref().is_some_and(|r| !r.is_empty()) {
                let back = parse(&a.to_string()).unwrap();
                for l in universe() {
                    prop_assert_eq!(a.matches(&l), back.matches(&l));
                }
            }
        }

        #[test]
        fn label_pairs_select_as_the_map_does(a in selector()) {
            for l in universe() {
                let pairs: LabelPairs = l.clone().into_iter().collect();
                prop_assert_eq!(a.matches(&pairs), a.matches(&l));
            }
        }

        /// Of a key given twice the last value is kept, and the pairs come out in key order.
        #[test]
        fn label_pairs_collect_as_a_map_does(
            given in proptest::collection::vec((proptest::sample::select(KEYS.to_vec()), "[xy]{0,2}"), 0..8),
        ) {
            let given: Vec<(String, String)> = given.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
            let pairs: LabelPairs = given.clone().into_iter().collect();
            let map: Labels = given.into_iter().collect();
            prop_assert!(pairs.iter().eq(map.iter().map(|(k, v)| (k.as_str(), v.as_str()))));
        }

        #[test]
        fn parser_never_panics(s in "\\PC{0,40}") {
            let _ = parse(&s);
        }
    }
}
