//! JUnit XML, as CI dashboards read it: testsuites of testcases, failures carrying text.

use jiff::Timestamp;

/// Testsuite elements and their totals, for one `<testsuites>` document.
pub struct Suites {
    pub xml: String,
    pub tests: usize,
    pub failures: usize,
    /// The server's clock when the suites were read.
    pub time: Timestamp,
    pub context: Option<String>,
}

/// A whole JUnit document from the suites of one context or several, named after the
/// context when there is just one.
pub fn junit_document(command: &str, parts: &[Suites]) -> String {
    let name = match parts {
        [one] if one.context.is_some() => format!("{command} ({})", one.context.as_deref().unwrap_or_default()),
        _ => command.to_string(),
    };
    let time = parts.first().map(|p| p.time).unwrap_or_else(Timestamp::now);
    let tests: usize = parts.iter().map(|p| p.tests).sum();
    let failures: usize = parts.iter().map(|p| p.failures).sum();
    let suites: String = parts.iter().map(|p| p.xml.as_str()).collect();
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" timestamp=\"{time}\">\n{suites}</testsuites>\n",
        xml(&name)
    )
}

/// Text escaped for an XML attribute or element.
pub fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            // XML 1.0 has no way to carry other control characters.
            c if (c as u32) < 0x20 && !matches!(c, '\n' | '\t' | '\r') => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}
