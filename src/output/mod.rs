//! Rendering: tables for people, JSON/YAML for machines, colour only when wanted.
//! Data goes to stdout, warnings to stderr.

pub mod junit;
pub mod progress;
pub mod table;

use std::io::{IsTerminal, Write};

use anyhow::Result;
use serde::Serialize;

use crate::cli::{ColorChoice, OutputArgs, OutputFormat};

/// Machine output carries this apiVersion; its shape only changes with the version.
pub const SCHEMA_VERSION: &str = "coord.kubectl.io/v1alpha1";

#[derive(Debug, Clone, Copy)]
pub struct Printer {
    pub format: OutputFormat,
    pub no_headers: bool,
    pub color: bool,
    pub color_stderr: bool,
    /// Columns human output is fitted to: the terminal's, else $COLUMNS; none when piped
    /// (nothing is wrapped for a pipe, as kubectl and git do).
    pub width: Option<usize>,
}

impl Printer {
    pub fn new(args: &OutputArgs) -> Printer {
        let no_color_env = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        let decide = |is_tty: bool| match args.color {
            ColorChoice::Always => true,
            ColorChoice::Never => false,
            ColorChoice::Auto => is_tty && !no_color_env,
        };
        Printer {
            format: args.output,
            no_headers: args.no_headers,
            color: decide(std::io::stdout().is_terminal()),
            color_stderr: decide(std::io::stderr().is_terminal()),
            width: output_width(),
        }
    }

    /// A printer with no colour and the given width: for tests and snapshots.
    pub fn plain(format: OutputFormat, width: Option<usize>) -> Printer {
        Printer { format, no_headers: false, color: false, color_stderr: false, width }
    }

    pub fn is_machine(&self) -> bool {
        matches!(self.format, OutputFormat::Json | OutputFormat::Yaml)
    }

    pub fn wide(&self) -> bool {
        self.format == OutputFormat::Wide
    }

    /// Serializes a report as JSON or YAML to stdout.
    pub fn machine<T: Serialize>(&self, report: &T) -> Result<()> {
        let text = match self.format {
            OutputFormat::Yaml => serde_saphyr::to_string(report)?,
            _ => serde_json::to_string_pretty(report)? + "\n",
        };
        out(&text)
    }

    /// A line of information on stderr (what a command did), not a warning.
    pub fn note(&self, message: &str) {
        progress::erase();
        eprintln!("{message}");
    }

    pub fn warn(&self, message: &str) {
        progress::erase();
        let label = if self.color_stderr {
            use owo_colors::OwoColorize;
            "warning:".yellow().bold().to_string()
        } else {
            "warning:".to_string()
        };
        eprintln!("{label} {message}");
    }
}

/// The terminal's width when stdout is one, else a positive $COLUMNS (set on purpose:
/// shells keep it unexported), else none.
fn output_width() -> Option<usize> {
    if std::io::stdout().is_terminal()
        && let Some((terminal_size::Width(w), _)) = terminal_size::terminal_size()
        && w > 0
    {
        return Some(usize::from(w));
    }
    std::env::var("COLUMNS").ok().and_then(|c| c.trim().parse().ok()).filter(|&w: &usize| w > 0)
}

/// Text in its tone's colour, the one palette for cells and whole lines: errors red and
/// bold, warnings yellow, good green, the rest dimmed or plain.
pub fn paint(text: &str, tone: table::Tone, color: bool) -> String {
    use owo_colors::OwoColorize;
    use table::Tone;
    if !color {
        return text.to_string();
    }
    match tone {
        Tone::Bad => text.red().bold().to_string(),
        Tone::Warn => text.yellow().to_string(),
        Tone::Good => text.green().to_string(),
        Tone::Dim => text.dimmed().to_string(),
        Tone::Plain => text.to_string(),
    }
}

pub use crate::text::{counted, serde_name};

/// Writes to stdout; a closed pipe (`| head`) ends the program quietly, as kubectl does.
pub fn out(text: &str) -> Result<()> {
    out_with(|stdout| stdout.write_all(text.as_bytes()))
}

/// Lets `write` write to stdout (a large table, as it renders), ending quietly on a closed
/// pipe as `out` does.
pub fn out_with(write: impl FnOnce(&mut std::io::StdoutLock<'static>) -> std::io::Result<()>) -> Result<()> {
    progress::stop();
    let mut stdout = std::io::stdout().lock();
    match write(&mut stdout).and_then(|_| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        other => Ok(other?),
    }
}

/// What a person sees of a renderer, for its tests: the view at 80, 100 and 120 columns
/// without colour, after asserting that no line is wider than the terminal and that the same
/// view with colour on shows exactly the same screen once its colour codes are taken out
/// (a painted line once wrapped a second time, its escapes counted as columns).
#[cfg(test)]
pub fn screens(render: impl Fn(&Printer) -> String) -> Vec<(usize, String)> {
    [80, 100, 120]
        .into_iter()
        .map(|width| {
            let plain = Printer::plain(OutputFormat::Table, Some(width));
            let text = render(&plain);
            for line in text.lines() {
                assert!(table::width(line) <= width, "wider than {width} columns: {line:?}\n{text}");
            }
            let painted = render(&Printer { color: true, ..plain });
            let shown = table::strip_colour(&painted);
            assert_eq!(shown, text, "with colour on, the screen at {width} columns differs:\n{shown}\n---\n{text}");
            (width, text)
        })
        .collect()
}
