//! JUnit XML, as CI dashboards read it, written by quick-junit: testsuites of testcases,
//! failures carrying text, what was not read as skipped testcases.

use jiff::Timestamp;
use quick_junit::{Report, TestSuite};

/// One context's testsuites, for one `<testsuites>` document.
pub struct Suites {
    pub suites: Vec<TestSuite>,
    /// The server's clock when the suites were read.
    pub time: Timestamp,
    pub context: Option<String>,
}

/// A whole JUnit document from the suites of one context or several, named after the
/// context when there is just one.
pub fn junit_document(command: &str, parts: &[Suites]) -> anyhow::Result<String> {
    let name = match parts {
        [Suites { context: Some(context), .. }] => format!("{command} ({context})"),
        _ => command.to_string(),
    };
    let mut report = Report::new(name);
    let time = parts.first().map(|p| p.time).unwrap_or_else(Timestamp::now);
    if let Some(t) = chrono::DateTime::from_timestamp(time.as_second(), time.subsec_nanosecond().max(0) as u32) {
        report.set_timestamp(t.fixed_offset());
    }
    report.add_test_suites(parts.iter().flat_map(|p| p.suites.iter().cloned()));
    Ok(report.to_string()?)
}
