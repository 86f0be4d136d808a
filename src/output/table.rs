//! kubectl-style tables: no borders, upper-case headers, three spaces between columns.

use std::io::Write;

use unicode_width::UnicodeWidthStr;

/// How a cell is coloured when colour is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Tone {
    #[default]
    Plain,
    Good,
    Warn,
    Bad,
    Dim,
}

#[derive(Debug, Clone, Default)]
pub struct Styled {
    pub text: String,
    pub tone: Tone,
}

impl From<&str> for Styled {
    fn from(text: &str) -> Styled {
        Styled { text: text.into(), tone: Tone::Plain }
    }
}

impl From<String> for Styled {
    fn from(text: String) -> Styled {
        Styled { text, tone: Tone::Plain }
    }
}

pub fn styled(text: impl Into<String>, tone: Tone) -> Styled {
    Styled { text: text.into(), tone }
}

pub struct Grid {
    headers: Vec<&'static str>,
    rows: Vec<Vec<Styled>>,
}

impl Grid {
    pub fn new(headers: Vec<&'static str>) -> Grid {
        Grid { headers, rows: Vec::new() }
    }

    pub fn row(&mut self, cells: Vec<Styled>) {
        debug_assert_eq!(cells.len(), self.headers.len());
        self.rows.push(cells);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Renders with a trailing newline; empty string when there are no rows. Written
    /// out rather than through comfy-table: check prints tens of thousands of rows, and
    /// the layout is simple (comfy-table stays the reference in the tests).
    pub fn render(self, no_headers: bool, color: bool) -> String {
        in_memory(|text| self.write_to(no_headers, color, text))
    }

    /// Writes the rendered table to `out`, 64 KiB of rows at a time. check -A's table is
    /// 40,000 rows, padded to its longest finding: rendered whole, about 18 MB of memory
    /// touched once (4,500 page faults) only to be copied out.
    pub fn write_to(&self, no_headers: bool, color: bool, out: &mut impl Write) -> std::io::Result<()> {
        if self.rows.is_empty() {
            return Ok(());
        }
        let header_row: Vec<Styled> = self.headers.iter().map(|h| Styled::from(*h)).collect();
        let header: &[Vec<Styled>] = if no_headers { &[] } else { std::slice::from_ref(&header_row) };
        let columns = self.headers.len();
        // At least one column wide even when empty (comfy-table's rule, kept for equal output).
        let mut widths = vec![1; columns];
        for row in header.iter().chain(&self.rows) {
            for (i, c) in row.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(c.text.split('\n').map(width).max().unwrap_or(0));
            }
        }
        let mut text = String::with_capacity(CHUNK + widths.iter().sum::<usize>() + 3 * columns + 1);
        for row in header.iter().chain(&self.rows) {
            write_row(row, &widths, color, &mut text);
            if text.len() >= CHUNK {
                out.write_all(text.as_bytes())?;
                text.clear();
            }
        }
        out.write_all(text.as_bytes())
    }
}

/// What `write` writes, as a String (the tables' `render`).
fn in_memory(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> String {
    let mut text = Vec::new();
    write(&mut text).expect("writing to memory");
    String::from_utf8(text).expect("cells are strings")
}

/// Bytes of rendered rows gathered before each write.
const CHUNK: usize = 64 * 1024;

fn write_row(row: &[Styled], widths: &[usize], color: bool, text: &mut String) {
    let columns = widths.len();
    // A cell with several lines makes its row that many lines high, as in comfy-table.
    let height = row.iter().map(|c| c.text.split('\n').count()).max().unwrap_or(1);
    for line in 0..height {
        let start = text.len();
        for (i, c) in row.iter().enumerate().take(columns) {
            let part = c.text.split('\n').nth(line).unwrap_or("");
            if color && !part.is_empty() {
                text.push_str(&paint(part, c.tone));
            } else {
                text.push_str(part);
            }
            if i + 1 < columns {
                pad(text, widths[i] - width(part) + 3);
            }
        }
        let kept = text[start..].trim_end().len();
        text.truncate(start + kept);
        text.push('\n');
    }
}

/// Appends `n` spaces: a large table is mostly padding, and pushed a char at a time it cost
/// more than the cells.
fn pad(text: &mut String, mut n: usize) {
    const SPACES: &str = "                                                                ";
    while n > 0 {
        let k = n.min(SPACES.len());
        text.push_str(&SPACES[..k]);
        n -= k;
    }
}

/// Columns `text` takes on a terminal. Printable ASCII (nearly every cell) is one column a
/// byte, checked far faster than a Unicode width lookup per character.
fn width(text: &str) -> usize {
    // Folded without stopping early, which the compiler turns into wide comparisons: every
    // cell is measured twice, and findings run to hundreds of characters.
    let printable = text.bytes().fold(true, |all, b| all & (b' '..=b'~').contains(&b));
    if printable { text.len() } else { UnicodeWidthStr::width(text) }
}

/// A cell's text in its tone's colour.
fn paint(text: &str, tone: Tone) -> String {
    use owo_colors::OwoColorize;
    match tone {
        Tone::Plain => text.to_string(),
        Tone::Good => text.green().to_string(),
        Tone::Warn => text.yellow().to_string(),
        Tone::Bad => text.red().bold().to_string(),
        Tone::Dim => text.dimmed().to_string(),
    }
}

/// A command's table output: a grid, what to say when it has no rows, and lines under it
/// (summaries, findings). Kept apart so a fleet run can merge grids under a CONTEXT column.
pub struct Table {
    pub grid: Grid,
    pub empty: Option<String>,
    pub lines: Vec<String>,
}

impl Table {
    pub fn new(grid: Grid) -> Table {
        Table { grid, empty: None, lines: Vec::new() }
    }

    pub fn render(self, no_headers: bool, color: bool) -> String {
        in_memory(|text| self.write_to(no_headers, color, text))
    }

    pub fn write_to(&self, no_headers: bool, color: bool, out: &mut impl Write) -> std::io::Result<()> {
        match (&self.empty, self.grid.is_empty()) {
            (Some(empty), true) => writeln!(out, "{empty}")?,
            _ => self.grid.write_to(no_headers, color, out)?,
        }
        for line in &self.lines {
            writeln!(out, "{line}")?;
        }
        Ok(())
    }
}

/// Several contexts' tables as one: a leading CONTEXT column over every grid (all have the
/// same headers), then each context's lines prefixed with its name.
pub fn merge(tables: Vec<(String, Table)>, no_headers: bool, color: bool) -> String {
    let headers = tables.first().map(|(_, t)| t.grid.headers.clone()).unwrap_or_default();
    let mut merged = Grid::new([vec!["CONTEXT"], headers].concat());
    let mut lines = Vec::new();
    for (context, table) in tables {
        // A context with no rows says so, as it would alone ("No leases found in ...").
        let empty = table.empty.filter(|_| table.grid.is_empty());
        for row in table.grid.rows {
            merged.row([vec![Styled::from(context.as_str())], row].concat());
        }
        let said = empty.into_iter().chain(table.lines).filter(|l| !l.is_empty());
        lines.extend(said.map(|l| format!("{context}: {l}")));
    }
    let mut text = merged.render(no_headers, color);
    if !text.is_empty() && !lines.is_empty() {
        text.push('\n');
    }
    for line in lines {
        text.push_str(&line);
        text.push('\n');
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use comfy_table::{Cell, CellAlignment, ColumnConstraint, ContentArrangement, presets};
    use proptest::prelude::*;

    /// The layout as comfy-table draws it (no colour): the reference for [`Grid::render`].
    fn comfy(headers: &[&str], rows: &[Vec<String>], no_headers: bool) -> String {
        if rows.is_empty() {
            return String::new();
        }
        let mut table = comfy_table::Table::new();
        table.load_preset(presets::NOTHING).set_content_arrangement(ContentArrangement::Disabled).force_no_tty();
        if !no_headers {
            table.set_header(headers.iter().map(Cell::new));
        }
        for row in rows {
            table.add_row(row.iter().map(Cell::new));
        }
        let last = headers.len().saturating_sub(1);
        for (i, column) in table.column_iter_mut().enumerate() {
            column.set_padding((0, if i == last { 0 } else { 3 }));
            column.set_cell_alignment(CellAlignment::Left);
            column.set_constraint(ColumnConstraint::ContentWidth);
        }
        let text: String = table.lines().map(|l| l.trim_end().to_string() + "\n").collect();
        if text.is_empty() { "\n".into() } else { text }
    }

    proptest! {
        #[test]
        fn lays_out_as_comfy_table_does(
            rows in proptest::collection::vec(proptest::collection::vec("[a-z é漢]{0,6}(\n[a-z]{0,3})?", 3), 1..6),
            no_headers in any::<bool>(),
        ) {
            let headers = ["NAME", "A", "LONGER HEADER"];
            let mut g = Grid::new(headers.to_vec());
            for r in &rows {
                g.row(r.iter().map(|c| Styled::from(c.as_str())).collect());
            }
            prop_assert_eq!(g.render(no_headers, false), comfy(&headers, &rows, no_headers));
        }

        #[test]
        fn width_is_the_unicode_width(text in any::<String>(), ascii in "[ -~]{0,40}") {
            prop_assert_eq!(width(&text), UnicodeWidthStr::width(text.as_str()));
            prop_assert_eq!(width(&ascii), UnicodeWidthStr::width(ascii.as_str()));
        }
    }

    #[test]
    fn a_table_of_many_chunks_lays_out_as_comfy_table_does() {
        let headers = ["NAME", "FINDING", "DETAIL"];
        let rows: Vec<Vec<String>> = (0..3000)
            .map(|i| vec![format!("object-{i}"), "x".repeat(i % 97), format!("kubectl coord owners {i}")])
            .collect();
        let mut g = Grid::new(headers.to_vec());
        for r in &rows {
            g.row(r.iter().map(|c| Styled::from(c.as_str())).collect());
        }
        let text = g.render(false, false);
        assert!(text.len() > 3 * CHUNK);
        assert_eq!(text, comfy(&headers, &rows, false));
    }

    #[test]
    fn kubectl_layout() {
        let mut g = Grid::new(vec!["NAME", "HOLDER"]);
        g.row(vec!["kube-scheduler".into(), "host_1".into()]);
        g.row(vec!["a".into(), styled("", Tone::Bad)]);
        let text = g.render(false, false);
        assert_eq!(text, "NAME             HOLDER\nkube-scheduler   host_1\na\n");
    }

    #[test]
    fn merged_tables_lead_with_the_context() {
        let table = |name: &str, line: &str| {
            let mut g = Grid::new(vec!["NAME"]);
            g.row(vec![name.into()]);
            Table { grid: g, empty: None, lines: vec![String::new(), line.to_string()] }
        };
        let text =
            merge(vec![("a".into(), table("x", "1 lease")), ("bb".into(), table("y", "2 leases"))], false, false);
        assert_eq!(text, "CONTEXT   NAME\na         x\nbb        y\n\na: 1 lease\nbb: 2 leases\n");
        let t =
            Table { grid: Grid::new(vec!["NAME"]), empty: Some("No leases found.".into()), lines: vec!["end".into()] };
        assert_eq!(t.render(false, false), "No leases found.\nend\n");
    }

    #[test]
    fn no_headers_and_colour() {
        let mut g = Grid::new(vec!["STATE"]);
        g.row(vec![styled("expired", Tone::Bad)]);
        assert_eq!(g.render(true, false), "expired\n");
        let mut g = Grid::new(vec!["STATE"]);
        g.row(vec![styled("expired", Tone::Bad)]);
        assert!(g.render(true, true).contains("\u{1b}["));
    }
}
